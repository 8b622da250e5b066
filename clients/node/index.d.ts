// Types of gmq-client. Every duration is in seconds (fractions allowed), as
// on gmq's wire: a job's delay and TTR, a pop's timeout, the client's timeout.

/** The client's options. */
export interface ClientOptions {
  /** The broker's base URL. Default "http://127.0.0.1:8000". */
  url?: string;
  /** The broker's [web] token, sent as "Authorization: Bearer <token>" on every request. */
  token?: string;
  /** Seconds a request may take; a waiting call (pop, ackAndPop…) gets its wait on top. Default 10. */
  timeout?: number;
  /** How many times a 503 is retried (Retry-After honoured). Default 3; 0: never. */
  retries?: number;
  /** The longest wait in seconds between two tries. Default 10. */
  retryMaxDelay?: number;
}

/** A job's own retry policy; what it leaves out is its topic's. */
export interface RetryPolicy {
  /** Failures after which the job is dead; 0: retried for ever. */
  maxAttempts?: number;
  backoff?: 'fixed' | 'linear' | 'exponential';
  /** Seconds. */
  base?: number;
  /** Seconds. */
  max?: number;
  jitter?: boolean;
}

/**
 * One job per key in a topic while the key is held: for seconds after the
 * push that took it. Another push with the key is refused (mode reject, the
 * default: a GmqError 409 naming the holder in heldBy), or changes the
 * waiting job that holds it (replace: its body, delay and priority;
 * debounce: its due time). A reserved or finished job is never changed: a
 * fresh job takes the key.
 */
export interface Unique {
  /** 1 to 256 bytes. */
  key: string;
  /** Seconds the key is held: 0.001 to 2592000 (30 days). */
  for: number;
  mode?: 'reject' | 'replace' | 'debounce';
}

/** What a push with unique did: gmq's answer. */
export interface Pushed {
  /** The job stored, or (with unique set) the waiting job that was changed instead. */
  id: string;
  /** gmq's number for it; left out when a retry found the job stored by an earlier try. */
  internal_id?: number;
  /** Set when the waiting job that held the key was changed and no job was made. */
  unique?: 'replaced' | 'debounced';
}

/**
 * A job's body: a string, or an object or an array, sent as JSON. gmq keeps
 * a JSON body's compact text and gives it back as it came: an object or an
 * array as one, a string as a string (even one whose text is JSON).
 */
export type Body = string | { [field: string]: unknown } | unknown[];

/** What push takes beside a topic and a body. */
export interface PushOptions {
  /** A client id (1-200 bytes of A-Za-z0-9-+;.$_()@=:, at least one non-digit); gmq numbers the job without one. */
  id?: string;
  /** Seconds before the job is ready. */
  delay?: number;
  /** Seconds a consumer has to ack; 0 removes the job as it is popped. The broker's default (60) when left out. */
  ttr?: number;
  /** 0..4294967295, lower first; default 1024. */
  priority?: number;
  retry?: RetryPolicy;
  /** Seconds from now after which the job is never delivered. */
  expiresIn?: number;
  /** The same as a Unix time in seconds. */
  expiresAt?: number;
  /** A W3C trace context, returned with the job on every pop. */
  traceparent?: string;
  /** One job per key while the key is held; push then resolves to a Pushed. */
  unique?: Unique;
  /** The job's fair group: 1 to 200 bytes of UTF-8, no control characters. A topic with grouped jobs pops its groups in turn, priority ordering the jobs within a group. */
  group?: string;
  /** Seconds the job is kept after its ack, completed, with the ack's result, over its topic's keep_completed; 0: deleted at its ack. */
  keepCompleted?: number;
  /** Seconds a worker's handler may run on the job: a Worker aborts it past this, or past its own timeout, whichever is shorter, and fails the job. */
  timeout?: number;
  /**
   * The jobs (1 to 100, by id, in any topic) this one waits for: it is
   * "waiting" until each has completed, then ready (or delayed by its own
   * delay, counted from then). One gmq does not have is a GmqError 400; one
   * already dead a 409, unless onDependencyFailure is 'run'. [] is none.
   */
  after?: Array<string | number | { id: string }>;
  /** What a dependency that fails (dies, is cancelled, deleted, expires…) does to it: 'cancel' (the default) ends it cancelled; 'run' counts it done. */
  onDependencyFailure?: 'cancel' | 'run';
  /** Keep each dependency's result (null for none), shown in getJob's dependency_results by id. */
  withResults?: boolean;
  /** Follow-ups pushed once when the job completes (each may have its own then; at most 100 in all, 8 deep). [] is none. */
  then?: FollowUp[];
  /** Follow-ups pushed once when the job dies (past its max_attempts); none withResult. [] is none. */
  onDead?: FollowUp[];
}

/** A job for pushBatch. */
export interface NewJob extends PushOptions {
  topic: string;
  body: Body;
}

/** A job as gmq shows it (popped, or looked at). Durations are in seconds. */
export interface Job {
  id: string;
  internal_id: number;
  topic: string;
  /** As pushed: a string, or the object or array pushed as JSON. */
  body: Body;
  state: 'ready' | 'delayed' | 'waiting' | 'reserved' | 'buried' | 'dead' | 'completed' | 'cancelled' | string;
  priority: number;
  delay: number;
  TTR: number;
  /** The delivery: pass the job itself to ack, fail, touch, release, bury. */
  attempt: number;
  reserves: number;
  consumeNum: number;
  timeouts: number;
  releases: number;
  buries: number;
  kicks: number;
  /** RFC 3339. */
  created: string;
  age: number;
  time_left: number;
  /** When a reservation's TTR runs out (RFC 3339). */
  due?: string;
  expires?: string;
  failures: number;
  last_error?: string;
  dead_at?: string;
  traceparent?: string;
  /** Its fair group, when it has one. */
  group?: string;
  /**
   * A popped job's: names its delivery (opaque). Every call given the job
   * sends it, so a late ack never reaches a new job pushed again with the
   * same id; a call given only an id sends none.
   */
  token?: string;
  /** Its own keep_completed (seconds), when it was pushed with one. */
  keep_completed?: number;
  /** Seconds a worker's handler may run on it, when it was pushed with one. */
  timeout?: number;
  /** A completed job's (state "completed"): when its ack completed it (RFC 3339). */
  completed_at?: string;
  /** A completed job's: the result its ack gave, as that JSON; absent: none. */
  result?: unknown;
  /** A cancelled job's (state "cancelled"): when it ended so (RFC 3339). */
  cancelled_at?: string;
  /** true on a reserved job whose cancel was asked: its consumer's next call on it is answered 410. */
  cancelling?: boolean;
  /** The last progress its consumer reported (see progress), as that JSON. */
  progress?: unknown;
  /** Its log, oldest first. */
  log?: LogLine[];
  /** The ids its then follow-ups are pushed under when it completes; gone once pushed. */
  then?: string[];
  /** The ids its onDead follow-ups are pushed under when it dies; gone once pushed. */
  on_dead?: string[];
  /** Pushed with after: the jobs it waits for, and those of them not yet completed, by number (their internal_id, as text). */
  after?: string[];
  waiting_for?: string[];
  /** Pushed with onDependencyFailure. */
  on_dependency_failure?: 'cancel' | 'run';
  /** Pushed withResults: each completed dependency's result (null for none), by number (as after). */
  dependency_results?: Record<string, unknown>;
  /** The batch it belongs to (createBatch, addToBatch). */
  batch?: string;
}

/** A line of a job's log. */
export interface LogLine {
  /** RFC 3339. */
  at: string;
  line: string;
}

/**
 * How a job ended (waitEnd, pushAndWait): the job itself when it is kept
 * (state "completed" with its result, "dead" with its last_error,
 * "cancelled"), else its id and how it went.
 */
export type End = Job | { id: string; state: 'acked' | 'deleted' | 'expired' | 'taken' | 'discarded' | 'gone' | 'cancelled' };

/** What progress reports; either may be left out. */
export interface ProgressOptions extends CallOptions {
  /** Any value JSON.stringify encodes; undefined or null: the last one given stays. */
  progress?: unknown;
  /** A line for the job's log (cut to 1 KiB; the topic keeps its max_log lines). */
  log?: string;
}

/** What a cron schedule's fires push, as gmq shows it (its retry policy and unique key, if any, are in file and run). */
export interface ScheduledJob {
  topic: string;
  body: Body;
  priority: number;
  TTR: number;
  delay: number;
  /** Its fair group, when it has one. */
  group?: string;
}

/** A cron schedule as gmq shows it. Times are RFC 3339, in UTC. */
export interface Schedule {
  name: string;
  /** Five fields, or six with seconds first; @daily, @every 1h30m. */
  cron: string;
  /** The IANA zone the fields are read in ("UTC" when none was set). */
  tz: string;
  job: ScheduledJob;
  overlap: 'allow' | 'skip';
  paused: boolean;
  /** Its next fire; absent while it is paused. */
  next?: string;
  /** Its last fire that pushed a job, and that job's id. */
  last?: string;
  last_id?: string;
  /** Fires that pushed a job (a fireSchedule counts as a fire). */
  fires: number;
  /** Fires that overlap 'skip' held back. */
  skips: number;
  /** Fires whose push the topic refused (full, too big, a unique key held). */
  refused: number;
  /** How late its fires were, summed (Redis's clock). */
  lateness_seconds: number;
  /** conf.ini's [schedule.NAME], as fields ({} for none). */
  file: Record<string, unknown>;
  /** The run-time layer over it: what setSchedule sets. */
  run: Record<string, unknown>;
}

/**
 * What setSchedule lays over a schedule's run-time layer: each field given
 * replaces its own, those left out stay, null takes one back to conf.ini's.
 * A new schedule needs cron and job.
 */
export interface ScheduleChanges {
  /** Five fields (minute hour day-of-month month day-of-week), or six with seconds first; @hourly, @every 1h30m. */
  cron?: string | null;
  /** The IANA zone cron is read in ("Europe/Berlin"); UTC when none. */
  tz?: string | null;
  /** What each fire pushes: a job as pushBatch takes it, but no id (each fire is a new job) and no expiry. */
  job?: Omit<NewJob, 'id' | 'expiresIn' | 'expiresAt'> | null;
  /** allow (the default): every fire pushes. skip: a fire while the last fire's job waits or is reserved pushes nothing. */
  overlap?: 'allow' | 'skip' | null;
  /** true: no fires until false. */
  paused?: boolean | null;
}

/** A job to act on: a popped job (its attempt and token fence the action to that delivery), or its id. */
export type JobRef = string | { id: string; attempt?: number; token?: string };

/** A job to ack in a batch: a JobRef, with its result and follow-ups when it has them ({...job, result, push}). */
export type AckRef = string | { id: string; attempt?: number; token?: string; result?: unknown; push?: FollowUp[] };

/**
 * A follow-up: a job as push takes it (topic, body and push's options), but
 * with no id or unique. withResult (an ack's push, a job's then, a batch's
 * callback) makes its body {body: its body, result: the finished job's
 * result, or the batch's summary (a BatchSummary)}.
 */
export type FollowUp = { topic: string; body: Body; withResult?: boolean } & Omit<PushOptions, 'id' | 'unique'>;

/** What createBatch takes: the jobs and the callbacks (follow-ups with no after), each optional. */
export interface NewBatch extends CallOptions {
  /** Up to 1,000 jobs, each as pushBatch takes it; none: an empty batch (done at once, unless open). */
  jobs?: NewJob[];
  /** Pushed once when every job has ended. */
  onComplete?: Omit<FollowUp, 'after'>;
  /** Pushed once when every job has ended and none died. */
  onSuccess?: Omit<FollowUp, 'after'>;
  /** Pushed once, at the first death. */
  onDeath?: Omit<FollowUp, 'after'>;
  /** Any JSON value (at most 16 KiB), kept with the batch and in each summary. */
  meta?: unknown;
  /** Keep the batch open for addToBatch until closeBatch. */
  open?: boolean;
  /** Keep the completed jobs' results for the summary (results, by id; up to 32 KiB of them). */
  withResults?: boolean;
}

/** A batch as gmq shows it (getBatch, closeBatch, listBatches). Times are RFC 3339. */
export interface Batch {
  id: string;
  state: 'open' | 'closed' | 'done' | 'cancelled' | string;
  total: number;
  /** Its jobs that have not ended. */
  pending: number;
  completed: number;
  dead: number;
  /** Its jobs that ended otherwise: deleted, expired, discarded, flushed or purged, cancelled. */
  removed: number;
  /** Up to 100 dead jobs' last errors, by id. */
  dead_jobs?: Record<string, string>;
  meta?: unknown;
  with_results?: boolean;
  /** The ids its callbacks are pushed under, by kind. */
  callbacks?: { on_complete?: string; on_success?: string; on_death?: string };
  created_at: string;
  finished_at?: string;
}

/** A page of the batches gmq keeps, newest first (listBatches). */
export interface BatchPage {
  /** The batches of the page, as getBatch shows them. */
  batches: Batch[];
  /** Where the page starts among the newest. */
  offset: number;
  /** How many batches gmq keeps in all. */
  total: number;
}

/** What listBatches takes: a page of the newest 5,000 batches (offset plus limit). */
export interface ListBatchesOptions extends CallOptions {
  /** How many newest batches to skip; 0 by default. */
  offset?: number;
  /** How many to answer, 1 to 1,000 (more is cut to 1,000); 50 by default. */
  limit?: number;
}

/** The result a batch's callback with withResult gets: the batch as it stands when it is pushed. */
export interface BatchSummary {
  /** The batch's id. */
  batch: string;
  state: 'done' | 'closed' | 'open' | string;
  total: number;
  completed: number;
  dead: number;
  removed: number;
  /** Its meta; null when none was given. */
  meta: unknown;
  /** With withResults: the completed jobs' results, by id. */
  results?: Record<string, unknown>;
  /** How many results were left out past 32 KiB. */
  results_left_out?: number;
}

/** A batch to act on: its id, or createBatch's answer or a Batch ({id}). */
export type BatchRef = string | { id: string };

export interface AckOptions extends CallOptions {
  /**
   * The job's result (undefined or null: none): any value JSON.stringify
   * encodes, kept with the job where it is kept completed (keep_completed)
   * and shown by getJob. Over the topic's max_result: GmqError 413, the job
   * still reserved.
   */
  result?: unknown;
  /**
   * Follow-ups (1 to 100; none or []: a plain ack): jobs gmq pushes once the
   * ack succeeds, each exactly once; ack then resolves to their ids. A bad
   * one: GmqError 400 naming it, the job still reserved.
   */
  push?: FollowUp[];
}

/** A job of a batch that could not be acked or failed, and why. */
export interface BatchFailure {
  id: string;
  status: number;
  error: string;
}

/** What ackMany did. */
export interface Acked {
  acked: string[];
  failed: BatchFailure[];
  /** The follow-ups' ids of the jobs acked with push, by acked id; absent when none. */
  pushed?: Record<string, string[]>;
  /** The next jobs, when ackMany was given a count. */
  jobs?: Job[];
}

/** What failMany did. */
export interface Failed {
  /** The jobs failed, as they now are ("delayed" or "dead"). */
  jobs: Job[];
  failed: BatchFailure[];
}

export interface CallOptions {
  /** Aborts the call: it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {
  /** Seconds to wait for a job. Default 0. */
  timeout?: number;
}

export interface AckManyOptions extends WaitOptions {
  /** With count > 0, pop up to count more jobs of topics in the same request. */
  topics?: string | string[];
  count?: number;
}

/** The worker's options. */
export interface WorkerOptions {
  /** Loops popping and running jobs at once. Default 1. */
  concurrency?: number;
  /** Seconds each long poll waits for a job. Default 30. */
  pollTimeout?: number;
  /** Seconds a handler may run (0, the default: no limit; a job's own timeout when shorter): past it its signal is aborted with a HandlerTimeoutError and its job failed with that message. */
  timeout?: number;
  /** Signals that stop the worker gracefully. Default ["SIGTERM", "SIGINT"]; [] or false: none. */
  signals?: string[] | false;
  /** Told of errors that are not the handler's (an ack refused, the broker down, a ResultError). Default: console.error. */
  onError?: (err: unknown, job?: Job) => void;
  /** Told of each job the handler failed (a throw or a rejection), after the job is failed. Default: console.error. */
  onFailure?: (err: unknown, job: Job) => void;
  /** Told of each job found cancelled while its handler ran (neither acked nor failed). Default: console.error. */
  onCancel?: (err: CancelledError, job: Job) => void;
}

/**
 * An event of a topic with events = true (Client.events): the broker's
 * JSON, with eventId, the stream's position after it; or, with type LOST,
 * the broker's word that events were missed (buckets, error).
 */
export interface GmqEvent {
  type: 'pushed' | 'reserved' | 'progress' | 'stalled' | 'completed' | 'failed' | 'dead' | 'cancelled' | 'expired' | 'lost' | string;
  topic: string;
  /** The job's id. */
  id: string;
  internal_id: number;
  attempt: number;
  /** When it happened (RFC 3339), Redis's clock. */
  at: string;
  /** A completed job's result, as that JSON. */
  result?: unknown;
  /** A failure's error (failed, dead), or a lost event's notice. */
  error?: string;
  progress?: unknown;
  /** What other types carry: the broker that reserved the job, where an expired job went. */
  detail?: unknown;
  /** The result, error or progress was cut at 1 KiB (it is then its first 1 KiB, as text). */
  cut?: boolean;
  /** A lost event's: the buckets whose events were missed. */
  buckets?: number[];
  /** The stream's position after this event: give it as lastEventId to resume after it. */
  eventId: string;
}

/** What events takes beside its topics. */
export interface EventsOptions {
  /** The types wanted (all when left out); an unknown one: GmqError 400. */
  types?: string[];
  /** Start after the event that had this eventId (left out: from now). */
  lastEventId?: string;
  /** Seconds a connection may stay silent before it is made again (default 45: the broker sends a keep-alive every 15 s). */
  idleTimeout?: number;
  /** Called each time a connection is in place: the events that happen from then on come. */
  onReady?: () => void;
  /** Told why a connection ended and how many seconds it waits before the next. */
  onReconnect?: (why: unknown, wait: number) => void;
  /** Its abort ends the iterator. */
  signal?: AbortSignal;
}

/** The type of the event events yields when events were missed. */
export const LOST: 'lost';
export const eventsDefaults: Readonly<{ idleTimeout: number }>;

/** An answer from gmq that is not a success; status 0 when there was no answer. */
export class GmqError extends Error {
  constructor(status: number, message: string, extra?: { body?: unknown; cause?: unknown });
  name: 'GmqError';
  /** The HTTP status (400, 401, 404, 409, 410, 413, 429, 503…), 0 when there was no answer. */
  status: number;
  /** gmq's answer, with its other fields (a batch push's stored_ids, an ack's acked). */
  body?: { error?: string; [field: string]: unknown };
  /** For a 409 to a unique push (mode reject): the id of the job that holds its key. */
  readonly heldBy: string | undefined;
}

export class Client {
  /** @param options the broker's URL, or the options */
  constructor(options?: string | ClientOptions);
  readonly url: string;
  /** Stores a unique job; resolves to gmq's answer: the job, or the waiting job it replaced or debounced. A held key (reject): GmqError 409 with heldBy. */
  push(topic: string, body: Body, options: PushOptions & CallOptions & { unique: Unique }): Promise<Pushed>;
  /** Stores a job; returns its id. With a client id, a retry's 409 returns the id as stored. */
  push(topic: string, body: Body, options?: Omit<PushOptions, 'unique'> & CallOptions & { unique?: undefined }): Promise<string>;
  /** push with options whose unique may or may not be set: the id, or (with unique) a Pushed. */
  push(topic: string, body: Body, options?: PushOptions & CallOptions): Promise<string | Pushed>;
  /** Pushes a job, then waits up to wait seconds for its end in the same request: end is null when it has not ended (wait again with waitEnd). */
  pushAndWait(topic: string, body: Body, options: PushOptions & CallOptions & { wait: number }): Promise<{ id: string; end: End | null }>;
  /** Stores several jobs, all or none; returns their ids in order. */
  pushBatch(jobs: NewJob[], options?: CallOptions): Promise<string[]>;
  /** Reserves a job, waiting up to timeout seconds; null when none came. */
  pop(topics: string | string[], options?: WaitOptions): Promise<Job | null>;
  /** Reserves up to count jobs, waiting up to timeout seconds for the first; [] when none came. */
  popMany(topics: string | string[], count: number, options?: WaitOptions): Promise<Job[]>;
  /** Finishes a popped job, with a result if given; with follow-ups (push), resolves to their ids. */
  ack(job: JobRef, options: AckOptions & { push: FollowUp[] }): Promise<string[]>;
  ack(job: JobRef, options?: AckOptions): Promise<void>;
  /** Acks a popped job (with a result if given) and pops the next in the same request; null when none came. */
  ackAndPop(job: JobRef, topics: string | string[], options?: WaitOptions & Omit<AckOptions, 'push'>): Promise<Job | null>;
  /** Acks popped jobs, each on its own (with its result, if it has one), and with a count pops more. */
  ackMany(jobs: AckRef[], options?: AckManyOptions): Promise<Acked>;
  /** Reports a popped job failed; returns it as it now is ("delayed" or "dead"). */
  fail(job: JobRef, error?: string | Error, options?: CallOptions): Promise<Job>;
  /** Reports several failures with one reason. */
  failMany(jobs: JobRef[], error?: string | Error, options?: CallOptions): Promise<Failed>;
  /** Gives a popped job a fresh TTR. */
  touch(job: JobRef, options?: CallOptions): Promise<Job>;
  /** Gives a popped job back, ready after delay seconds. */
  release(job: JobRef, options?: CallOptions & { delay?: number; priority?: number }): Promise<Job>;
  /** Parks a popped job until it is kicked. */
  bury(job: JobRef, options?: CallOptions & { priority?: number }): Promise<Job>;
  /** Changes a waiting (ready or delayed) job in place: delay (seconds from now; 0: ready at once), priority, body. A reserved one: GmqError 409. */
  update(job: JobRef, changes?: CallOptions & { delay?: number; priority?: number; body?: Body }): Promise<Job>;
  /** Reports a popped job's progress and a log line; resolves to the job. Cancelled: GmqError 410, and its worker handler's signal is aborted. */
  progress(job: JobRef, options?: ProgressOptions): Promise<Job>;
  /** Ends a job that should not run: a waiting one at once (state "cancelled"), a reserved one at its consumer's next call (cancelling: true). Ended: 409. */
  cancel(id: string, options?: CallOptions): Promise<Job | { id: string; state: 'cancelled' }>;
  /** Waits up to timeout seconds for a job's end: how it ended, or null. Unknown: GmqError 404. */
  waitEnd(id: string, options?: WaitOptions): Promise<End | null>;
  /** A job in any state (a completed one with its completed_at and result), or null when gmq does not know it. */
  getJob(id: string, options?: CallOptions): Promise<Job | null>;
  /** Frees a topic's unique key before its window ends: the next push with it makes a new job. Not held: GmqError 404. */
  releaseUnique(topic: string, key: string, options?: CallOptions): Promise<void>;
  /** Every cron schedule, by name. */
  schedules(options?: CallOptions): Promise<Schedule[]>;
  /** A cron schedule. None: GmqError 404. */
  getSchedule(name: string, options?: CallOptions): Promise<Schedule>;
  /** Makes or changes a cron schedule (null takes a field back to conf.ini's); resolves to it as it now is. A bad one: GmqError 400. */
  setSchedule(name: string, changes: ScheduleChanges & CallOptions): Promise<Schedule>;
  /** Removes a cron schedule. None: GmqError 404. */
  deleteSchedule(name: string, options?: CallOptions): Promise<void>;
  /** Pushes a schedule's job now, counted as its last fire. None: 404; overlap skip while its last job waits: 409. */
  fireSchedule(name: string, options?: CallOptions): Promise<{ id: string; internal_id: number }>;
  /**
   * Pushes jobs as one batch whose ends gmq counts, with its callbacks;
   * resolves to the batch's id and its jobs' ids, in order. Bad: GmqError
   * 400; a job refused (409…) cancels the batch (the error's body.batch).
   */
  createBatch(batch?: NewBatch): Promise<{ id: string; ids: string[] }>;
  /** A batch: its state and counts. None: GmqError 404. */
  getBatch(id: BatchRef, options?: CallOptions): Promise<Batch>;
  /** The batches gmq keeps, newest first: a page of them and how many in all. Past the newest 5,000 (offset plus limit): GmqError 400. */
  listBatches(options?: ListBatchesOptions): Promise<BatchPage>;
  /** Pushes jobs into a batch that is not done; resolves to their ids. Done or cancelled: GmqError 409. */
  addToBatch(id: BatchRef, jobs: NewJob[], options?: CallOptions): Promise<string[]>;
  /** Closes an open batch (done once its jobs have ended); resolves to it. Cancelled: GmqError 409. */
  closeBatch(id: BatchRef, options?: CallOptions): Promise<Batch>;
  /** Cancels a batch and its jobs that have not ended (no callback is pushed); resolves to how many it asked to cancel. Done: GmqError 409. */
  cancelBatch(id: BatchRef, options?: CallOptions): Promise<number>;
  /**
   * The events of topics (those with events = true) as they happen: an async
   * iterator that connects again by itself after a dropped, silent or
   * lagging connection, resuming after its last event, and yields a LOST
   * event when the broker no longer keeps what was missed. A refusal no
   * retry mends (400, 401) rejects with a GmqError. Leaving the loop, or
   * options.signal, ends it.
   */
  events(topics: string | string[], options?: EventsOptions): AsyncGenerator<GmqEvent, void, undefined>;
  /** Starts a worker: see Worker. What the handler resolves to is its job's result (undefined: none), or a Done (result and follow-ups). */
  worker(topics: string | string[], handler: (job: Job, context: { signal: AbortSignal }) => unknown, options?: WorkerOptions): Worker;
}

/**
 * Loops that pop jobs and run a handler on each: touched every TTR/2 while it
 * runs, acked when it returns (with what it resolved to as the result),
 * failed with the error's message when it throws.
 */
export class Worker {
  /** Use Client.worker. */
  constructor(client: Client, topics: string[], handler: (job: Job, context: { signal: AbortSignal }) => unknown, options?: WorkerOptions);
  /** Resolves when the worker has stopped and the jobs in hand were acked or failed; rejects with a fatal error (401…). */
  readonly done: Promise<void>;
  /** stop() was called, a signal came, or a fatal error. */
  readonly stopping: boolean;
  /** Stops popping (aborting the long polls), lets the jobs in hand finish; returns done. */
  stop(): Promise<void>;
}

export const defaults: Readonly<Required<Omit<ClientOptions, 'token'>>>;
export const workerDefaults: Readonly<{ concurrency: number; pollTimeout: number; timeout: number; signals: readonly string[] }>;

/** The reason a handler's signal is aborted with past the worker's timeout, and its job's failure. */
export class HandlerTimeoutError extends Error {
  constructor(seconds: number);
}
/**
 * The reason a handler's signal is aborted with when its job was cancelled
 * while it ran, and what onCancel is told; its cause is gmq's 410.
 */
export class CancelledError extends Error {
  constructor(how: string, cause: unknown);
  name: 'CancelledError';
}
/**
 * What a handler resolves to to end its job with follow-ups: its job is
 * acked with result and push (see Client.ack). Follow-ups gmq refuses
 * fail the job, and onError is told (a ResultError).
 */
export class Done {
  constructor(options?: { result?: unknown; push?: FollowUp[] });
  result: unknown;
  push: FollowUp[];
}
/**
 * What a worker's onError is told when a handler's result could not be sent
 * (not JSON) or kept (413, over max_result), and its job was acked without
 * it, or when a Done's follow-ups were refused, and its job failed; its
 * cause is why.
 */
export class ResultError extends Error {
  constructor(message: string, cause: unknown);
  name: 'ResultError';
}

/** What verifyWebhook takes beside a secret, the headers and the body. */
export interface VerifyWebhookOptions {
  /** Seconds the webhook-timestamp may be from now, before or after (the bound passes). Default 300. */
  tolerance?: number;
  /** Now, as a Unix time in seconds (fractions allowed) or a Date. Default the clock's. */
  now?: number | Date;
}

/** A request's headers: req.headers, a fetch Headers, a Map or a plain object, names in any case. */
export type WebhookHeaders =
  | Headers
  | Map<string, string | string[]>
  | Record<string, string | string[] | number | undefined>;

/**
 * Checks an HTTP push delivery's Standard Webhooks signature: returns when
 * one of its v1 signatures is body's under one of secret's keys (the
 * topic's deliver_secret, or two space-separated while it is rotated), and
 * throws a WebhookVerificationError otherwise (a header missing, a
 * timestamp not a whole number or past the tolerance, no signature that
 * matches). body is the raw body as received, before any JSON parsing. A
 * secret that is not whsec_ and base64 throws a TypeError.
 */
export function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array, options?: VerifyWebhookOptions): void;

/** A delivery refused by verifyWebhook: answer it with a 4xx, and do no work. */
export class WebhookVerificationError extends Error {
  constructor(message: string);
  name: 'WebhookVerificationError';
}

/** This client's release (package.json's version). */
export const version: string;

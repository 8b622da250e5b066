<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Client's calls on batches (gmq's docs/workflows.md, Batches):
 * jobs pushed together whose ends gmq counts; when every one has ended it
 * pushes the batch's on_complete job once, and on_success too if none
 * died; on_death once, at the first death.
 */
trait Batches
{
    /**
     * Creates a batch and pushes its $jobs (arrays as pushBatch takes them;
     * at most 1,000, none with a unique key in mode replace or debounce),
     * and returns ['id' => the batch's id, 'ids' => its jobs' ids, in
     * order]. The callbacks ($onComplete, $onSuccess, $onDeath; null: none)
     * are jobs as push takes them (arrays, without 'id', 'unique' or
     * 'after'); one with 'with_result' => true gets the batch's summary as
     * its result: its body becomes ['body' => its body, 'result' =>
     * ['batch', 'state', 'total', 'completed', 'dead', 'removed', 'meta',
     * and with $withResults 'results', the completed jobs' results by id]].
     * $meta (any value json_encode encodes; null: none) is kept with the
     * batch and in each summary. An $open batch takes addToBatch until
     * closeBatch; a batch made with no jobs and closed is done at once.
     *
     * A bad batch is a GmqException 400 (nothing stored); one a job of which
     * its topic refused (full, a unique key held: 409) was cancelled with the
     * jobs already pushed, its answer naming it ('batch'): create it again.
     *
     * A 503 is retried when it names no batch: gmq pushed none of its jobs
     * (a batch it began and could not answer for is cancelled by its sweep
     * within a minute, its callbacks never pushed). A 503 that names one
     * ($answer['batch']) is thrown at once, with client ids or without:
     * gmq made that batch and pushed some of its jobs, then cancels it (the
     * jobs pushed too), so a blind retry would push a second batch's worth
     * while the first may, at worst, still stand (when its cancel failed
     * too: getBatch() says which). Create it again once you know.
     *
     * @param list<array<string, mixed>> $jobs
     * @param null|array<string, mixed> $onComplete
     * @param null|array<string, mixed> $onSuccess
     * @param null|array<string, mixed> $onDeath
     * @return array{id: string, ids: list<string>}
     */
    public function createBatch(array $jobs, ?array $onComplete = null, ?array $onSuccess = null, ?array $onDeath = null, mixed $meta = null, bool $open = false, bool $withResults = false): array
    {
        $given = ['on_complete' => $onComplete, 'on_success' => $onSuccess, 'on_death' => $onDeath, 'meta' => $meta,
            'open' => $open ?: null, 'with_results' => $withResults ?: null];
        $payload = ['jobs' => array_values($jobs)] + array_filter($given, fn ($v) => $v !== null);
        $answer = $this->http->retrying(fn () => $this->http->send('POST', '/api/v1/batches', $payload),
            fn (Response $r) => isset($r->answer['batch']))->ok(); // a batch made: its jobs were pushed
        return ['id' => (string) $answer['id'], 'ids' => array_map('strval', $answer['ids'] ?? [])];
    }

    /**
     * Batch $id as gmq shows it: id, state ('open', 'closed', 'done' or
     * 'cancelled'), total, pending, completed, dead, removed (ended
     * otherwise: deleted, expired, cancelled...), dead_jobs (up to 100 of
     * its dead jobs' last errors, by id), meta, callbacks (the ids they are
     * pushed under, by kind), created_at and finished_at (RFC 3339), those
     * it has. A GmqException 404 when there is none (or it was removed past
     * its retention).
     *
     * @return array<string, mixed>
     */
    public function getBatch(string $id): array
    {
        return $this->call('GET', $this->batchPath($id), null);
    }

    /**
     * Pushes $jobs (as createBatch's) into batch $id, open, or closed and
     * not done (a running job may add to its own batch: its 'batch'), and
     * returns their ids in order. A GmqException 404 for no such batch,
     * 409 once it is done or cancelled; a job its topic refuses cancels
     * those of this call already pushed, the batch standing.
     *
     * A 503 may have added some of them, and they may stand. It is retried
     * only when every job has a client id, so that none is pushed twice (a
     * job an earlier try left refuses the retry: a 409, thrown, the batch
     * as that try left it); without ids it is thrown at once (getBatch's
     * total says what is there).
     *
     * @param list<array<string, mixed>> $jobs
     * @return list<string>
     */
    public function addToBatch(string $id, array $jobs): array
    {
        $jobs = array_values($jobs);
        $withIds = $jobs !== [] && array_filter($jobs, fn ($j) => !isset($j['id'])) === [];
        $answer = $this->http->retrying(fn () => $this->http->send('POST', $this->batchPath($id) . '/jobs', ['jobs' => $jobs]),
            fn () => !$withIds)->ok(); // without ids, a 503 may have added some: not resent
        return array_map('strval', $answer['ids'] ?? []);
    }

    /**
     * Closes batch $id: once its jobs have all ended it is done, and its
     * callbacks are pushed (at once, when they have). Returns the batch as
     * it now is (see getBatch). Closing a closed or done batch changes
     * nothing (so a retry is safe); a cancelled one is a GmqException 409,
     * an unknown one 404.
     *
     * @return array<string, mixed>
     */
    public function closeBatch(string $id): array
    {
        return $this->call('POST', $this->batchPath($id) . '/close', null);
    }

    /**
     * Cancels batch $id: no callback of it is pushed, and its jobs that have
     * not ended are cancelled (a reserved one at its consumer's next call,
     * as cancel() does); its counts catch up within a second or two. Returns
     * how many jobs it asked to cancel. Again on a cancelled batch: 0; a
     * done one is a GmqException 409, an unknown one 404. A 503 part way
     * (a batch of many thousands) is retried, the batch cancelled already:
     * the count is then the last try's, the jobs the earlier ones cancelled
     * left out.
     */
    public function cancelBatch(string $id): int
    {
        return (int) ($this->call('DELETE', $this->batchPath($id), null)['cancelled'] ?? 0);
    }

    private function batchPath(string $id): string
    {
        return '/api/v1/batches/' . rawurlencode($id);
    }
}

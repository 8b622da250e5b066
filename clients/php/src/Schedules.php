<?php

declare(strict_types=1);

namespace Gmq;

/**
 * @internal Client's calls on cron schedules: gmq keeps them in its Redis,
 * and every broker fires them, each fire once.
 */
trait Schedules
{
    /**
     * Every cron schedule, by name: arrays with gmq's fields (see schedule()).
     *
     * @return list<array<string, mixed>>
     */
    public function schedules(): array
    {
        return $this->call('GET', '/api/v1/schedules', null)['schedules'];
    }

    /**
     * One cron schedule, as gmq shows it: name, cron, tz, job (topic, body,
     * priority, TTR, delay, group), overlap ('allow' or 'skip'), paused,
     * next (RFC 3339, UTC; absent while paused), last and last_id (its last
     * fire that pushed a job), fires, skips, refused, lateness_seconds, and
     * its layers file (conf.ini's [schedule.NAME]) and run (the run-time
     * one over it). A GmqException 404 when there is none.
     */
    public function schedule(string $name): array
    {
        return $this->call('GET', $this->schedulePath($name), null);
    }

    /**
     * Makes schedule $name, or changes it, and returns it as it now is.
     * Each field of $changes lies over its run-time layer, the others stay;
     * null takes one back to conf.ini's [schedule.NAME] (or its default). A
     * new schedule needs cron and job:
     *   'cron'    five fields, or six with seconds first; '@daily', '@every 1h30m'
     *   'tz'      the IANA zone the fields are read in ('Europe/Berlin'; UTC when none)
     *   'job'     what each fire pushes: a push's fields (topic, body, delay, TTR,
     *             priority, retry, unique, group) but no id
     *   'overlap' 'allow' (every fire pushes) or 'skip' (a fire while the last
     *             fire's job still waits or is reserved pushes nothing: a skip)
     *   'paused'  true: no fires until false
     * Its next fire is counted from now. A bad definition throws a
     * GmqException 400 that says what is wrong (a field gmq does not know
     * is named, not dropped).
     *
     * @param array<string, mixed> $changes
     */
    public function setSchedule(string $name, array $changes): array
    {
        if ($changes === [] || array_is_list($changes)) {
            throw new \InvalidArgumentException('gmq: a schedule change names its fields: cron, tz, job, overlap, paused');
        }
        return $this->call('PUT', $this->schedulePath($name), $changes);
    }

    /**
     * Removes schedule $name (one of conf.ini's comes back at the broker's
     * next reload). A GmqException 404 when there is none; a retry's 404
     * means an earlier try deleted it.
     */
    public function deleteSchedule(string $name): void
    {
        $this->delete($this->schedulePath($name));
    }

    /**
     * Pushes schedule $name's job now, outside its cron, and returns ['id',
     * 'internal_id'] of the job: counted as its last fire, its next fire
     * unchanged (a paused schedule fires too). A GmqException 404 when there
     * is none, 409 when its overlap is 'skip' and its last job still waits
     * or is reserved (counted as a skip), or when its job's unique key is
     * held. A fire is not safe to repeat: a retry after a 503 may fire it
     * twice (under overlap 'skip' the retry throws the 409 instead).
     */
    public function fireSchedule(string $name): array
    {
        return $this->call('POST', $this->schedulePath($name) . '/fire', null);
    }

    private function schedulePath(string $name): string
    {
        return '/api/v1/schedules/' . rawurlencode($name);
    }
}

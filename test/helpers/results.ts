// Job results built by hand for the analysis's unit tests: the fields every result has, with the
// given ones over them, checked by the result schema so a test cannot build what no probe reports.
import type { RequestSample } from '../../contracts/common.js';
import { probeResultSchema, type ProbeResult } from '../../contracts/result.js';

export function probeResult(fields: Record<string, unknown>): ProbeResult {
  return probeResultSchema.parse({
    schema: 'probefleet.result/v1',
    jobId: 'run-1.lossy.http.reuse-new-0000000000',
    runId: 'run-1',
    region: 'lossy',
    target: 'http',
    ok: true,
    error: null,
    startedAt: '2026-12-01T00:00:00.000Z',
    finishedAt: '2026-12-01T00:00:10.000Z',
    worker: { host: 'test', pid: 1, region: 'lossy' },
    summary: { requests: 0, errors: 0, connectionsOpened: 0, durationMs: 0, phases: {} },
    findings: [],
    ...fields,
  });
}

/** One answered request: 200, a new connection unless `extra` says otherwise. */
export const requestSample = (seq: number, phases: RequestSample['phases'], extra: Partial<RequestSample> = {}) => ({
  seq,
  status: 200,
  newConnection: true,
  bodyBytes: 2,
  phases,
  ...extra,
});

// Whatever a target answers, a run still ends in a report that reads back. One real run of every
// probe against the lab gives real results; each case then puts generated target answers into
// them (Alt-Svc values, certificate names and dates, server header values, response statuses,
// body sizes, phases a client did not time), checks them with the result schema as a worker does, and sends them through the
// analysis, every report format and JSON, and back through the report schema.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { PHASES } from '../../contracts/common.js';
import { probeResultSchema, runReportSchema, type ProbeResult } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { runEmbedded } from '../../coordinator/embedded-runner.js';
import { parsePlan } from '../../coordinator/plan-loader.js';
import { renderCsvReport } from '../../coordinator/report/csv.js';
import { renderHtmlReport } from '../../coordinator/report/html.js';
import { renderMarkdownReport } from '../../coordinator/report/markdown.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { buildRunReport } from '../../coordinator/run-report.js';
import { splitPlan } from '../../coordinator/split.js';
import { startLab, type Lab } from '../../lab/index.js';
import { everyProbePlan } from '../helpers/metrics-plan.js';
import { PROPERTY_RUNS, propertyParams } from '../helpers/property-runs.js';

const log = createLogger('test', 'silent');
const quiet = { start() {}, step() {}, done() {} };

/** Header-like text: printable ASCII and Latin-1 mostly, with the odd control, escape and digit run. */
const headerText = fc.oneof(
  fc.string({ maxLength: 120 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc
    .tuple(
      fc.constantFrom('h3', 'h3-29', '%', '%%', 'h%33', 'clear'),
      fc.string({ maxLength: 8 }),
      fc.bigInt({ min: 0n, max: 10n ** 400n }),
    )
    .map(([p, host, n]) => `${p}="${host}:${n}"; ma=${n}, h3=":${n % 70000n}"`),
);
/** As the tls probe records a certificate's date (common/target-values.ts isoDate): four-digit years, or null. */
const isoOrNull = fc.option(
  fc
    .date({ noInvalidDate: true, min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z') })
    .map((d) => d.toISOString()),
);

/** Each result with generated answers where the target's answers go. */
function withAnswers(
  results: ProbeResult[],
  answers: {
    altSvc: string[];
    name: string;
    notAfter: string | null;
    status: number;
    bytes: number;
    dropped: string[];
    total: number | null;
  },
): unknown[] {
  return results.map((r) => {
    const copy = structuredClone(r) as Record<string, unknown> & ProbeResult;
    copy.altSvc = answers.altSvc;
    const details = copy.details as Record<string, unknown> | null;
    if (r.probe === 'tls' && details?.certificate) {
      details.certificate = {
        ...(details.certificate as object),
        subject: answers.name,
        issuer: answers.name,
        notAfter: answers.notAfter,
        daysLeft: answers.notAfter === null ? null : (Date.parse(answers.notAfter) - Date.now()) / 86_400_000,
      };
      details.certNotAfter = answers.notAfter;
    }
    for (const sample of (details?.samples as
      | { status?: number; bodyBytes?: number; newConnection?: boolean; phases?: Record<string, number> }[]
      | undefined) ?? []) {
      if (typeof sample.status === 'number') sample.status = answers.status;
      if (typeof sample.bodyBytes === 'number') sample.bodyBytes = answers.bytes;
      // A client that times fewer phases (curl's cold mode, a request cut short).
      for (const phase of answers.dropped) delete sample.phases?.[phase];
      // Every reused request the same time (a server at the delayed-ACK timer gives 40 ms each).
      if (answers.total !== null && sample.phases?.total !== undefined && !sample.newConnection)
        sample.phases.total = answers.total;
    }
    return copy;
  });
}

let lab: Lab;
let results: ProbeResult[];
let plan: Awaited<ReturnType<typeof parsePlan>>;

before(async () => {
  lab = await startLab({ log });
  plan = await parsePlan(await everyProbePlan(lab, 'properties'), 'properties.yaml');
  results = await runEmbedded(splitPlan(plan, 'properties-run'), { log, progress: quiet });
});
after(() => lab?.close());

test('generated target answers: the results validate, and the report renders in every format and reads back', () => {
  fc.assert(
    fc.property(
      fc.record({
        altSvc: fc.array(headerText, { maxLength: 4 }),
        name: headerText,
        notAfter: isoOrNull,
        status: fc.integer({ min: 100, max: 599 }),
        bytes: fc.nat({ max: 2 ** 40 }),
        dropped: fc.subarray([...PHASES]),
        total: fc.option(
          fc.oneof(fc.double({ min: 39, max: 45, noNaN: true }), fc.double({ min: 0, max: 1e5, noNaN: true })),
        ),
      }),
      (answers) => {
        const generated = withAnswers(results, answers).map((r) => probeResultSchema.parse(r));
        const report = buildRunReport({
          runId: 'properties-run',
          mode: 'embedded',
          plan: plan.plan,
          startedAt: new Date('2026-12-01T00:00:00Z'),
          finishedAt: new Date('2026-12-01T00:01:00Z'),
          results: generated,
        });
        for (const render of [renderRunReport, renderMarkdownReport, renderHtmlReport, renderCsvReport])
          assert.equal(typeof render(report), 'string');
        const back = runReportSchema.safeParse(JSON.parse(JSON.stringify(report)));
        assert.ok(back.success, back.success ? '' : back.error.message);
      },
    ),
    propertyParams(Math.ceil(PROPERTY_RUNS / 4)),
  );
});

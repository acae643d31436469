// Does the baseline rule hold across nights? Runs a plan the way nightly runs go: a baseline of
// earlier runs, then twin runs (nothing changed) and regression runs (one thing changed on the
// server side), each compared with the newest `--baseline` earlier twin runs by the same code the
// coordinator uses. Counts false alarms (a twin run called regressed or improved anywhere) and
// regressions found (the changed target called regressed). A regression run never joins the
// baseline, as a fixed regression would not.
//
//   node dist/bench/verdicts.js --where loopback [--stress]     # the lab in this process, stress-ng --cpu 2 beside it
//   node dist/bench/verdicts.js --where region                  # an emulated region: 40 ms ± 5 ms, 1 % loss each way (root)
//   [--twins 20] [--regressions 20] [--baseline 7] [--markdown FILE]
//
// The injected regressions, each a change of the target's URL between runs, as an upgrade gone
// wrong would make it: the https target served TLS 1.2 only (one more round trip per new
// connection; the tls probe's 1.3 handshakes fail), the http target closing every connection
// (keep-alive off), the http target writing headers and body apart with Nagle on.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createLogger } from '../common/log.js';
import type { RunComparison } from '../contracts/comparison.js';
import type { RunReport } from '../contracts/result.js';
import { compareRuns } from '../coordinator/compare/compare-runs.js';
import { parsePlan } from '../coordinator/plan-loader.js';
import { withLabTargets } from '../coordinator/lab-targets.js';
import { startLab } from '../lab/index.js';
import { runPlanInRegions } from '../regions/fleet-run.js';
import { startRegions, type RegionSpec } from '../regions/harness.js';
import { startTargetLab } from '../regions/target-lab.js';
import { runPlanText } from '../test/helpers/example-runs.js';

const { values } = parseArgs({
  options: {
    where: { type: 'string', default: 'loopback' },
    stress: { type: 'boolean', default: false },
    twins: { type: 'string', default: '20' },
    regressions: { type: 'string', default: '20' },
    baseline: { type: 'string', default: '7' },
    markdown: { type: 'string' },
  },
});
const where = values.where === 'region' ? 'region' : 'loopback';
const twins = Number(values.twins);
const regressionRuns = Number(values.regressions);
const baselineRuns = Number(values.baseline);
const log = createLogger('bench', 'silent');

/** Enough requests on loopback for every p95's interval (72); fewer over 40 ms, where a run's time is round trips. */
const planText = (urls: { http: string; https: string }) => `
name: verdicts-bench
targets:
  - { name: http, url: "${urls.http}" }
  - { name: https, url: "${urls.https}", tls: { insecure: true } }
experiments:
  - probe: reuse
    requests: ${where === 'region' ? 40 : 100}
    modes: [reused, new]
  - probe: tls
    targets: [https]
    samples: ${where === 'region' ? 30 : 80}
    versions: ['1.3']
`;

const UNCHANGED = { http: 'lab:keepalive/', https: 'lab:https/' };
const REGRESSIONS = [
  { name: 'TLS 1.3 -> 1.2 (one more round trip)', target: 'https', urls: { ...UNCHANGED, https: 'lab:tls12/' } },
  { name: 'keep-alive switched off', target: 'http', urls: { ...UNCHANGED, http: 'lab:close/' } },
  { name: 'Nagle switched on', target: 'http', urls: { ...UNCHANGED, http: 'lab:keepalive/nagle' } },
];
const REGION: RegionSpec = { name: 'far', rttMs: 40, jitterMs: 5, lossPercent: { up: 1, down: 1 } };

type Runner = (urls: { http: string; https: string }, runId: string) => Promise<RunReport>;

async function withRunner<T>(use: (run: Runner) => Promise<T>): Promise<T> {
  if (where === 'loopback') {
    const lab = await startLab({ log });
    try {
      return await use((urls, runId) => runPlanText(planText(urls), 'verdicts.yaml', { runId, lab }));
    } finally {
      await lab.close();
    }
  }
  const regions = await startRegions({ regions: [REGION], log });
  try {
    const lab = await startTargetLab(regions);
    try {
      return await use(async (urls, runId) => {
        const loaded = withLabTargets(await parsePlan(planText(urls), 'verdicts.yaml'), lab.address, 'no lab');
        return runPlanInRegions(regions, loaded, { runId, log });
      });
    } finally {
      await lab.close();
    }
  } finally {
    await regions.close();
  }
}

function startStress(): ChildProcess | undefined {
  if (!values.stress) return undefined;
  // At the normal policy even when this bench runs under `chrt --rr`: the load is the machine's
  // other work, which a real-time measurer preempts; inherited, it would share the measurer's slices.
  const child = spawn('chrt', ['--other', '0', 'stress-ng', '--cpu', '2', '--timeout', '4h', '--quiet'], {
    stdio: 'ignore',
  });
  child.once('error', (err) => {
    process.stderr.write(`stress-ng did not start (apt-get install stress-ng): ${err.message}\n`);
    process.exit(1);
  });
  return child;
}

const changed = (c: RunComparison) => c.quantities.filter((q) => q.verdict !== 'unchanged');
const describe = (q: RunComparison['quantities'][number]) =>
  `${q.verdict} ${q.target} ${q.probe} ${Object.values(q.variant).join(' ')} ${q.quantity}: ${q.baseline.median.toFixed(2)} -> ${q.after.toFixed(2)} (${q.reason})`;

const stress = startStress();
const started = Date.now();
try {
  const summary = await withRunner(async (run) => {
    const history: RunReport[] = [];
    for (let i = 0; i < baselineRuns; i++) history.unshift(await run(UNCHANGED, `baseline-${i}`));
    let quantities = 0;
    let machineBusy = 0;
    const notCompared = new Map<string, number>();
    const falseAlarms: string[] = [];
    const found = REGRESSIONS.map(() => ({ found: 0, quantities: new Map<string, number>(), missed: [] as string[] }));
    const trials = Math.max(twins, regressionRuns);
    for (let i = 0; i < trials; i++) {
      const baseline = history.slice(0, baselineRuns);
      for (const [k, regression] of REGRESSIONS.entries()) {
        if (i >= regressionRuns) break;
        const c = await compareRuns(baseline, await run(regression.urls, `regression-${k}-${i}`));
        const hits = changed(c).filter((q) => q.verdict === 'regressed' && q.target === regression.target);
        if (hits.length > 0) found[k].found++;
        else {
          // What the changed target's largest changes were called, and why.
          const largest = c.quantities
            .filter((q) => q.target === regression.target && q.relativeChange !== null)
            .sort((a, b) => Math.abs(b.relativeChange!) - Math.abs(a.relativeChange!))
            .slice(0, 3);
          found[k].missed.push(`run ${i}: ${largest.map(describe).join('; ') || 'nothing compared'}`);
        }
        for (const q of hits) found[k].quantities.set(q.quantity, (found[k].quantities.get(q.quantity) ?? 0) + 1);
      }
      if (i < twins) {
        const twin = await run(UNCHANGED, `twin-${i}`);
        const c = await compareRuns(baseline, twin);
        quantities += c.quantities.length;
        machineBusy += c.quantities.filter((q) => q.reason === 'machine-busy').length;
        for (const n of c.notCompared) notCompared.set(n.reason, (notCompared.get(n.reason) ?? 0) + 1);
        falseAlarms.push(...changed(c).map((q) => `twin ${i}: ${describe(q)}`));
        history.unshift(twin);
      }
    }
    return { quantities, machineBusy, notCompared, falseAlarms, found };
  });
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const setting =
    where === 'region'
      ? `emulated region ${REGION.rttMs} ms ± ${REGION.jitterMs} ms, ${REGION.lossPercent?.up} % loss each way`
      : `loopback${values.stress ? ', stress-ng --cpu 2 beside it' : ''}`;
  const lines = [
    `${setting}; baseline ${baselineRuns} runs; ${minutes} min`,
    `twin runs: ${twins}, false alarms: ${summary.falseAlarms.length} of ${summary.quantities} quantities (${new Set(summary.falseAlarms.map((a) => a.split(':')[0])).size} twin runs with one)`,
    ...summary.falseAlarms.map((a) => `  ${a}`),
    `twin quantities not judged, machine busy (the worker's wait for a CPU explains the change): ${summary.machineBusy}`,
    `twin quantities not compared: ${[...summary.notCompared.values()].reduce((a, b) => a + b, 0)}${[...summary.notCompared].map(([reason, n]) => `; ${n} ${reason}`).join('')}`,
    ...REGRESSIONS.flatMap((r, k) => {
      const top = [...summary.found[k].quantities.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([q, n]) => `${q} ${n}`)
        .join(', ');
      return [
        `regression "${r.name}": found in ${summary.found[k].found} of ${regressionRuns} runs (regressed quantities: ${top || 'none'})`,
        ...summary.found[k].missed.slice(0, 5).map((m) => `  missed ${m}`),
      ];
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (values.markdown)
    await appendFile(
      values.markdown,
      `\n### Verdicts: ${setting}\n\n\`node dist/bench/verdicts.js --where ${where}${values.stress ? ' --stress' : ''} --twins ${twins} --regressions ${regressionRuns} --baseline ${baselineRuns}\` (${new Date().toISOString().slice(0, 10)})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
    );
} finally {
  stress?.kill('SIGKILL');
}

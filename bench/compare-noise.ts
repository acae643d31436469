// How often does `compare` call two runs against the same servers different? Runs pairs of
// examples/compare-nightly.yaml against one lab (in this process, free ports), optionally with
// busy processes during every second run (a neighbour starting work between two runs), and
// counts the quantities called regressed or improved. Run it under `chrt --rr 5` to see what
// real-time priority changes (docs/compare.md, "Measuring on a busy machine").
//
//   node dist/bench/compare-noise.js [--pairs 8] [--burn 2]
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../common/log.js';
import { compareRuns } from '../coordinator/compare/compare-runs.js';
import { startLab } from '../lab/index.js';
import { runPlanText } from '../test/helpers/example-runs.js';
import { REPO_ROOT } from '../test/helpers/repo.js';

const { values } = parseArgs({
  options: { pairs: { type: 'string', default: '8' }, burn: { type: 'string', default: '0' } },
});
const pairs = Number(values.pairs);
const burners = Number(values.burn);

const lab = await startLab({ log: createLogger('bench', 'silent') });
try {
  const plan = await readFile(path.join(REPO_ROOT, 'examples', 'compare-nightly.yaml'), 'utf8');
  let quantities = 0;
  const alarms: string[] = [];
  for (let i = 0; i < pairs; i++) {
    const before = await runPlanText(plan, 'compare-nightly.yaml', { runId: `noise-${i}-before`, lab });
    const busy = Array.from({ length: burners }, () =>
      spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
    );
    let after: Awaited<ReturnType<typeof runPlanText>>;
    try {
      after = await runPlanText(plan, 'compare-nightly.yaml', { runId: `noise-${i}-after`, lab });
    } finally {
      for (const child of busy) child.kill('SIGKILL');
    }
    const comparison = compareRuns(before, after);
    quantities += comparison.quantities.length;
    for (const q of comparison.quantities.filter((x) => x.verdict !== 'unchanged'))
      alarms.push(
        `pair ${i}: ${q.verdict} ${q.target} ${q.probe} ${Object.values(q.variant).join(' ')} ${q.quantity}: ${q.before.toFixed(2)} -> ${q.after.toFixed(2)}`,
      );
  }
  const pairsWithAlarm = new Set(alarms.map((a) => a.split(':')[0])).size;
  process.stdout.write(
    `${alarms.join('\n')}${alarms.length ? '\n' : ''}${alarms.length} of ${quantities} quantities in ${pairs} pairs called regressed or improved (${pairsWithAlarm} of the pairs had one); ${burners} busy processes during each second run\n`,
  );
} finally {
  await lab.close();
}

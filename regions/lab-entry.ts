// Runs inside the target namespace: the lab target (lab/index.ts) on the target addresses (URLs
// name the first; the lab answers at the others too, on the same ports). Prints
// `{"servers": {name: url}, "caFile": path}` as one JSON line once every server listens; closes
// the lab on SIGINT/SIGTERM or when stdin closes (the harness is gone).
import { createLogger } from '../common/log.js';
import { startLab } from '../lab/index.js';

const [host, port, ...alsoAt] = process.argv.slice(2);
if (!host || !/^\d+$/.test(port ?? '')) throw new Error('usage: lab-entry.js HOST BASE_PORT [ALSO_AT...]');

const lab = await startLab({
  host,
  alsoAt,
  basePort: Number(port),
  log: createLogger('lab', process.env.PROBEFLEET_LOG_LEVEL ?? 'warn'),
});
process.stdout.write(
  `${JSON.stringify({ servers: Object.fromEntries(Object.values(lab.servers).map((s) => [s.name, s.url])), caFile: lab.caFile })}\n`,
);

let closing = false;
const close = async () => {
  if (closing) return;
  closing = true;
  await lab.close();
  process.exit(0);
};
process.once('SIGINT', close);
process.once('SIGTERM', close);
process.stdin.on('end', close).resume();

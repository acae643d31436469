// A benchmark child process: the lab target on free loopback ports, in a process of its own so
// it never shares an event loop with the tool being measured. Prints the servers' URLs as one
// JSON line on stdout, then serves until its stdin closes (the parent exiting closes it too).
import { createLogger } from '../common/log.js';
import { startLab } from '../lab/index.js';

const lab = await startLab({ log: createLogger('bench-lab', 'warn') });
process.stdout.write(`${JSON.stringify(Object.fromEntries(Object.values(lab.servers).map((s) => [s.name, s.url])))}\n`);
process.stdin.resume();
process.stdin.once('close', () => void lab.close().then(() => process.exit(0)));

// Runs inside a region's namespace: reads that region's jobs (a JSON array) on stdin, runs them
// with the embedded runner as that region (the worker's own code), and writes the results (a
// JSON array) on stdout. Logs and the progress bar go to stderr.
import { text } from 'node:stream/consumers';
import { createLogger } from '../common/log.js';
import { runEmbedded } from '../coordinator/embedded-runner.js';
import { progressFor } from '../coordinator/progress.js';
import { TargetPolicy } from '../worker/target-policy.js';
import { TARGET_ALLOWANCES } from './harness.js';

const region = process.argv[2];
if (!region) throw new Error('usage: region-runner-entry.js REGION < jobs.json');
const jobs = JSON.parse(await text(process.stdin));
const log = createLogger(`region-${region}`, process.env.PROBEFLEET_LOG_LEVEL ?? 'warn');
// The target host is on private addresses (IPv4 and IPv6); nothing else in the namespace is a target.
const targetPolicy = new TargetPolicy({ allowLoopback: false, allowTargets: TARGET_ALLOWANCES });
const results = await runEmbedded(jobs, { log, progress: progressFor(), region, targetPolicy });
process.stdout.write(`${JSON.stringify(results)}\n`);

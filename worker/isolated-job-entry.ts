// The separate process of worker/isolated-job.ts: reads one job on stdin, runs it as any worker
// would, writes its result as JSON on stdout and exits. Whatever kills it kills only this job.
import './heap-settings.js';
import { text } from 'node:stream/consumers';
import { createLogger } from '../common/log.js';
import { executeCheckedJob } from './execute-job.js';
import type { IsolatedJobInput } from './isolated-job.js';
import { TargetPolicy } from './target-policy.js';

const input = JSON.parse(await text(process.stdin)) as IsolatedJobInput;
const log = createLogger('worker', input.logLevel).child({ isolated: true });
const result = await executeCheckedJob(input.job, {
  region: input.region,
  log,
  targetPolicy: new TargetPolicy(input.policy),
});
process.stdout.write(JSON.stringify(result), () => process.exit(0));

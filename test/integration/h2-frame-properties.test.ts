// Whatever HTTP/2 frames a server sends, the http2 probe ends with a result that validates,
// within its bounds, and the process stays up: generated frame sequences (any type, flags,
// stream and payload, after the server's SETTINGS or without it) from a raw server on loopback.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { probeResultSchema } from '../../contracts/result.js';
import { encodeFrame, FRAME_TYPE } from '../../common/h2-frames.js';
import { createLogger } from '../../common/log.js';
import { executeJob } from '../../worker/execute-job.js';
import { jobsOf } from '../helpers/plans.js';
import { PROPERTY_RUNS, propertyParams } from '../helpers/property-runs.js';

const log = createLogger('test', 'silent');
const TIMEOUT_MS = 300;

const frame = fc.record({
  type: fc.oneof(fc.constantFrom(...Object.values(FRAME_TYPE), 0x2, 0x6, 0x8), fc.integer({ min: 0, max: 255 })),
  flags: fc.integer({ min: 0, max: 255 }),
  streamId: fc.oneof(fc.constantFrom(0, 1, 2, 3), fc.integer({ min: 0, max: 2 ** 31 - 1 })),
  payload: fc.uint8Array({ maxLength: 48 }),
});
const script = fc.record({
  settingsFirst: fc.boolean(),
  frames: fc.array(frame, { maxLength: 8 }),
  close: fc.constantFrom('end', 'destroy', 'stay'),
});
type Script = typeof script extends fc.Arbitrary<infer S> ? S : never;

let current: Script = { settingsFirst: true, frames: [], close: 'end' };
let server: net.Server;
let url: string;

before(async () => {
  server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.setTimeout(2_000, () => socket.destroy());
    const { settingsFirst, frames, close } = current;
    socket.once('data', () => {
      const bytes = frames.map((f) => encodeFrame(f.type, f.flags, f.streamId, Buffer.from(f.payload)));
      socket.write(
        Buffer.concat([...(settingsFirst ? [encodeFrame(FRAME_TYPE.SETTINGS, 0, 0)] : []), ...bytes]),
        () => {
          if (close === 'end') socket.end();
          else if (close === 'destroy') socket.destroy();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(() => server?.close());

test('generated frame sequences: the http2 probe gives a result that validates, within its job bound', async () => {
  const [job] = await jobsOf(`
name: frames
jobTimeoutSeconds: 10
targets: [{ name: raw, url: "${url}" }]
experiments: [{ probe: http2, repeats: 1, concurrent: 2, timeoutMs: ${TIMEOUT_MS} }]
`);
  await fc.assert(
    fc.asyncProperty(script, async (s) => {
      current = s;
      const started = performance.now();
      const result = await executeJob(job, { region: job.region, log });
      const tookMs = performance.now() - started;
      assert.ok(probeResultSchema.safeParse(result).success);
      assert.notEqual(result.error?.code, 'INTERNAL_ERROR', result.error?.message);
      assert.ok(tookMs < job.timeLimitMs, `took ${Math.round(tookMs)} ms`);
    }),
    propertyParams(Math.ceil(PROPERTY_RUNS / 8)),
  );
});

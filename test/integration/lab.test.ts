import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { request } from 'undici';
import { createLogger } from '../../common/log.js';
import { LAB_SERVERS, startLab } from '../../lab/index.js';

const log = createLogger('test', 'silent');

test('the lab starts every server on free loopback ports, counts connections and stops cleanly', async () => {
  const lab = await startLab({ log });
  assert.deepEqual(Object.keys(lab.servers).sort(), LAB_SERVERS.map((s) => s.name).sort());
  const res = await request(lab.url('keepalive'));
  assert.equal(res.statusCode, 200);
  assert.match(await res.body.text(), /probefleet lab/);
  assert.equal(lab.servers.keepalive.connectionsAccepted(), 1);
  await lab.close();
  const port = lab.servers.keepalive.port;
  await assert.rejects(
    new Promise((resolve, reject) => net.connect(port, '127.0.0.1').on('connect', resolve).on('error', reject)),
    /ECONNREFUSED/,
  );
});

test('a base port that is taken is reported, not half-started', async () => {
  const blocker = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => blocker.once('listening', resolve));
  const taken = (blocker.address() as net.AddressInfo).port;
  // The https server sits at offset 2; make it collide.
  await assert.rejects(startLab({ basePort: taken - 2, log }), /cannot listen on 127\.0\.0\.1:\d+: the port is in use/);
  blocker.close();
});

// A target's own name resolution (`dns`, `ipFamily`) end to end on loopback: the lab's DNS server
// counts the queries it gets for each name, so a cold cache is one query per new connection and a
// warm one a single query before the measurement; Debian's dnsmasq is a real resolver in between
// and answers names of its own; Debian's nginx listens on 127.0.0.1 and [::1] and logs which
// address each request came in on. The target policy judges the addresses the connections' own
// lookups gave. Timings are held to lower bounds the lab's delays set, never to a quiet machine.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { JobPayload } from '../../contracts/job.js';
import type { ProbeResult } from '../../contracts/result.js';
import { createLogger } from '../../common/log.js';
import { analyzeRun } from '../../coordinator/analysis.js';
import { executeJob } from '../../worker/execute-job.js';
import { TargetPolicy } from '../../worker/target-policy.js';
import { needs, startDnsmasq, type Dnsmasq } from '../helpers/dnsmasq.js';
import { labDnsQueries, labForThisFile } from '../helpers/lab.js';
import { needsNginx, startNginx, type Nginx } from '../helpers/nginx.js';
import { jobsOf } from '../helpers/plans.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();
const labResolver = () => `127.0.0.1:${lab.servers.dns.port}`;
/** A name of its own under the lab's zone ("slow-30" answers 30 ms late); A 127.0.0.1, AAAA ::1. */
const freshName = (labels: string) => `t${randomBytes(4).toString('hex')}.${labels}.lab.probefleet.test`;

async function run(target: string, experiment: string, policy?: TargetPolicy): Promise<ProbeResult[]> {
  const jobs = await jobsOf(`
name: target-dns
jobTimeoutSeconds: 60
targets: [${target}]
experiments: [${experiment}]
`);
  const results: ProbeResult[] = [];
  for (const job of jobs as JobPayload[])
    results.push(await executeJob(job, { region: 'local', log, targetPolicy: policy }));
  return results;
}

describe("a target's name, resolved as its dns settings say", () => {
  test('cold: each new connection is one query, timed in its resolve phase; warm: one query before the measurement', async () => {
    const port = lab.servers.keepalive.port;
    const cold = freshName('slow-30');
    const [coldResult] = await run(
      `{ name: t, url: "http://${cold}:${port}/", dns: { server: "${labResolver()}", cache: cold } }`,
      '{ probe: reuse, requests: 8, modes: [new] }',
    );
    assert.equal(coldResult.ok, true, JSON.stringify(coldResult.error));
    assert.equal(await labDnsQueries(lab, cold), 8, 'one query per new connection');
    assert.deepEqual(coldResult.resolution, {
      server: labResolver(),
      cache: 'cold',
      ipFamily: 'any',
      lookups: 8,
      fromCache: 0,
      answers: [['127.0.0.1']],
    });
    assert.ok(
      coldResult.summary.phases.resolve!.p50 >= 30,
      `resolve ${coldResult.summary.phases.resolve!.p50} ms: the server answers 30 ms late`,
    );

    const warm = freshName('slow-30');
    const [warmResult] = await run(
      `{ name: t, url: "http://${warm}:${port}/", dns: { server: "${labResolver()}", cache: warm } }`,
      '{ probe: reuse, requests: 8, modes: [new] }',
    );
    assert.equal(warmResult.ok, true, JSON.stringify(warmResult.error));
    assert.equal(await labDnsQueries(lab, warm), 1, 'one query, before the measurement');
    assert.equal(warmResult.resolution?.lookups, 0);
    assert.equal(warmResult.resolution?.fromCache, 8);
    assert.ok(warmResult.summary.phases.resolve!.p50 < 30, 'no connection waited for the server');
  });

  test('the system resolver by default: getaddrinfo, one lookup per connection, and nothing looked up before', async () => {
    const [result] = await run(
      `{ name: t, url: "http://localhost:${lab.servers.keepalive.port}/" }`,
      '{ probe: reuse, requests: 3, modes: [new] }',
    );
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.deepEqual(result.resolution, {
      server: 'system',
      cache: 'cold',
      ipFamily: 'any',
      lookups: 3,
      fromCache: 0,
      answers: [['127.0.0.1']],
    });
    assert.ok(result.summary.phases.resolve !== undefined, 'the resolve phase is timed');
  });

  test('a DNS server the target names is held to the target policy, and so is every address it answers', async () => {
    const name = freshName('plain');
    const noLoopback = new TargetPolicy({ allowLoopback: false, allowTargets: [] });
    const [result] = await run(
      `{ name: t, url: "http://${name}:${lab.servers.keepalive.port}/", dns: { server: "${labResolver()}" } }`,
      '{ probe: reuse, requests: 2, modes: [new] }',
      noLoopback,
    );
    assert.equal(result.error?.code, 'TARGET_REFUSED_BY_POLICY');
    assert.match(result.error!.message, /127\.0\.0\.1 is loopback/);
    assert.equal(await labDnsQueries(lab, name), 0, 'no query was sent to a refused server');
  });

  test('answers that change between connections are seen, and said (TARGET_ADDRESSES_CHANGE)', async () => {
    // The lab's rotating name answers 127.0.0.1, .2, .3, .4 in turn: one server on each, the same port.
    const servers = await listenOnEach(['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4']);
    try {
      const name = freshName('rotate.ttl-0');
      const results = await run(
        `{ name: t, url: "http://${name}:${servers.port}/", dns: { server: "${labResolver()}", cache: cold } }`,
        '{ probe: reuse, requests: 4, modes: [new] }',
      );
      const [result] = results;
      assert.equal(result.ok, true, JSON.stringify(result.error));
      assert.deepEqual(result.resolution?.answers.map((a) => a.join(' ')).sort(), [
        '127.0.0.1',
        '127.0.0.2',
        '127.0.0.3',
        '127.0.0.4',
      ]);
      assert.deepEqual(servers.requestsPerAddress(), {
        '127.0.0.1': 1,
        '127.0.0.2': 1,
        '127.0.0.3': 1,
        '127.0.0.4': 1,
      });
      const findings = analyzeRun(results).findings.map((f) => f.code);
      assert.ok(findings.includes('TARGET_ADDRESSES_CHANGE'), findings.join());
    } finally {
      await servers.close();
    }
  });
});

describe('through a real resolver (dnsmasq)', needs('dnsmasq', 'dnsmasq'), () => {
  let dnsmasq: Dnsmasq;
  before(async () => {
    dnsmasq = await startDnsmasq(lab.servers.dns.port, 0, { 'internal.test': ['10.1.2.3'] });
  });
  after(() => dnsmasq?.stop());

  test('a cold lookup through it waits for the server behind it; a warm one does not', async () => {
    const port = lab.servers.keepalive.port;
    const [cold] = await run(
      `{ name: t, url: "http://${freshName('slow-40')}:${port}/", dns: { server: "${dnsmasq.resolver}", cache: cold } }`,
      '{ probe: reuse, requests: 4, modes: [new] }',
    );
    assert.equal(cold.ok, true, JSON.stringify(cold.error));
    assert.ok(cold.summary.phases.resolve!.p50 >= 40, `resolve ${cold.summary.phases.resolve!.p50} ms`);
    const [warm] = await run(
      `{ name: t, url: "http://${freshName('slow-40')}:${port}/", dns: { server: "${dnsmasq.resolver}", cache: warm } }`,
      '{ probe: reuse, requests: 4, modes: [new] }',
    );
    assert.equal(warm.resolution?.fromCache, 4);
    assert.ok(warm.summary.phases.resolve!.p50 < 40);
  });

  test('a name answering an internal address is refused where the connection resolved it, and never connected to', async () => {
    for (const cache of ['cold', 'warm']) {
      const [result] = await run(
        `{ name: t, url: "http://internal.test:9/", dns: { server: "${dnsmasq.resolver}", cache: ${cache} } }`,
        '{ probe: reuse, requests: 2, modes: [new] }',
      );
      assert.equal(result.error?.code, 'TARGET_REFUSED_BY_POLICY', cache);
      assert.match(result.error!.message, /10\.1\.2\.3 \(internal\.test\) is private/, cache);
      assert.equal(result.summary.requests - result.summary.errors, 0, cache);
    }
  });
});

describe('IPv4 and IPv6 side by side (nginx on 127.0.0.1 and [::1])', needsNginx, () => {
  let nginx: Nginx;
  let port: number;
  before(async () => {
    nginx = await startNginx([{ files: { 'index.html': 'ok' }, ipv6: true }]);
    port = Number(new URL(nginx.urls[0]).port);
  });
  after(() => nginx?.stop());

  const target = (name: string, ipFamily: string) =>
    `{ name: api, url: "http://${name}:${port}/", ipFamily: ${ipFamily}, dns: { server: "${labResolver()}" } }`;

  async function addressesSeen(fn: () => Promise<unknown>): Promise<string[]> {
    const before = (await nginx.accessLog()).length;
    await fn();
    return (await nginx.accessLog()).slice(before).map((line) => line.serverAddress);
  }

  test('ipFamily 4 and 6 connect over that family only', async () => {
    for (const [family, address] of [
      [4, '127.0.0.1'],
      [6, '::1'],
    ] as const) {
      let result: ProbeResult | undefined;
      const seen = await addressesSeen(async () => {
        [result] = await run(target(freshName('plain'), String(family)), '{ probe: reuse, requests: 3, modes: [new] }');
      });
      assert.equal(result!.ok, true, JSON.stringify(result!.error));
      assert.deepEqual(seen, [address, address, address], `ipFamily ${family}`);
      assert.deepEqual(result!.resolution?.answers, [[address]]);
    }
  });

  test('both: one target per family, NAME-ipv4 and NAME-ipv6, each over its own', async () => {
    let results: ProbeResult[] = [];
    const seen = await addressesSeen(async () => {
      results = await run(target(freshName('plain'), 'both'), '{ probe: reuse, requests: 2, modes: [new] }');
    });
    assert.deepEqual(
      results.map((r) => [r.target, r.ok, r.resolution?.ipFamily]),
      [
        ['api-ipv4', true, 4],
        ['api-ipv6', true, 6],
      ],
    );
    assert.deepEqual(seen.sort(), ['127.0.0.1', '127.0.0.1', '::1', '::1']);
    assert.deepEqual(
      analyzeRun(results).findings.filter((f) => f.code === 'IP_FAMILY_FAILS'),
      [],
      'on loopback neither family fails',
    );
  });

  test('happy-eyeballs: both families given to the connection to race; IPv6 answers first here', async () => {
    let result: ProbeResult | undefined;
    const seen = await addressesSeen(async () => {
      [result] = await run(target(freshName('plain'), 'happy-eyeballs'), '{ probe: reuse, requests: 2, modes: [new] }');
    });
    assert.equal(result!.ok, true, JSON.stringify(result!.error));
    assert.deepEqual(result!.resolution?.answers, [['::1', '127.0.0.1']]);
    assert.deepEqual(seen, ['::1', '::1']);
  });

  test('IPv6 dropped (ip6tables DROP on the port): happy-eyeballs falls back to IPv4, and the ipv6 target fails (IP_FAMILY_FAILS)', {
    skip: process.getuid?.() !== 0 && process.env.CI !== 'true' ? 'needs root (ip6tables-legacy): run as root' : false,
  }, async () => {
    const rule = ['-I', 'INPUT', '-i', 'lo', '-p', 'tcp', '-d', '::1', '--dport', String(port), '-j', 'DROP'];
    execFileSync('ip6tables-legacy', rule);
    try {
      let fallback: ProbeResult | undefined;
      const seen = await addressesSeen(async () => {
        [fallback] = await run(
          target(freshName('plain'), 'happy-eyeballs'),
          '{ probe: reuse, requests: 1, modes: [new], timeoutMs: 3000 }',
        );
      });
      assert.equal(fallback!.ok, true, JSON.stringify(fallback!.error));
      assert.deepEqual(seen, ['127.0.0.1']);
      assert.ok(fallback!.summary.phases.connect!.p50 >= 200, 'the IPv6 attempt was given its 250 ms first');

      const results = await run(
        target(freshName('plain'), 'both'),
        '{ probe: reuse, requests: 2, modes: [new], timeoutMs: 1000 }',
      );
      const failed = analyzeRun(results).findings.filter((f) => f.code === 'IP_FAMILY_FAILS');
      assert.deepEqual(
        failed.map((f) => [f.target, f.data.failedFamily]),
        [['api-ipv6', 'IPv6']],
      );
    } finally {
      execFileSync(
        'ip6tables-legacy',
        rule.map((arg) => (arg === '-I' ? '-D' : arg)),
      );
    }
  });
});

/** An HTTP server on each address at one port, counting the requests each got. */
async function listenOnEach(addresses: string[]) {
  const counts: Record<string, number> = {};
  const servers: http.Server[] = [];
  let port = 0;
  for (const address of addresses) {
    const server = http.createServer((_req, res) => {
      counts[address] = (counts[address] ?? 0) + 1;
      res.end('ok');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    servers.push(server);
  }
  return {
    port,
    requestsPerAddress: () => ({ ...counts }),
    close: () => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve).closeAllConnections()))),
  };
}

// What a plan, a worker's environment or a target sends cannot inject, against the lab's
// hostile servers: `echo-headers` records every request head byte for byte, so a header a
// plan value smuggled in (CR LF, a character beyond Latin-1 cut to LF) would show there, through
// every probe that sends plan headers; `escape-cert` has terminal escape sequences in its
// certificate's subject and issuer, which every output format must show escaped.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobPayload } from '../../contracts/job.js';
import type { ProbeKind } from '../../contracts/probes/index.js';
import { createLogger } from '../../common/log.js';
import { InvalidJobError, executeJob } from '../../worker/execute-job.js';
import { labForThisFile } from '../helpers/lab.js';
import { jobsOf, writePlan } from '../helpers/plans.js';
import { runCli } from '../helpers/repo.js';
import { tempDir } from '../helpers/temp-dir.js';

const log = createLogger('test', 'silent');

/** Every probe that sends a target's headers, with small parameters; `tls` and `dns` send no HTTP. */
const SENDERS: Record<Exclude<ProbeKind, 'tls' | 'dns'>, string> = {
  reuse: 'requests: 2, modes: [reused, new, cold]',
  compression: 'requests: 1, repetitions: 1, encodings: [identity, gzip]',
  cors: 'allowedOrigins: ["https://app.example"]',
  drain: 'requests: 2, modes: [full, unread]',
  http2: 'repeats: 1, concurrent: 2',
  load: 'modes: [reused], connections: 1, streams: 1, durationSeconds: 0.2',
};

/** Every character a terminal could act on, or that reorders a line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('hostile input', () => {
  const lab = labForThisFile();
  const echo = () => lab.url('echo-headers');
  /** The request heads the echo server has seen, oldest first. */
  const seen = async (): Promise<string[]> =>
    (await fetch(lab.url('echo-headers', '/seen'))).json() as Promise<string[]>;
  const accepted = () => lab.servers['echo-headers'].connectionsAccepted();

  const plan = (kind: keyof typeof SENDERS, header = '"${env:PF_ECHO}"') => `
name: hostile-${kind}
jobTimeoutSeconds: 30
targets: [{ name: echo, url: "${echo()}/", headers: { x-probe: ${header} } }]
experiments: [{ probe: ${kind}, timeoutMs: 3000, ${SENDERS[kind]} }]
`;

  const withEnv = async <T>(value: string, run: () => Promise<T>): Promise<T> => {
    process.env.PF_ECHO = value;
    try {
      return await run();
    } finally {
      delete process.env.PF_ECHO;
    }
  };

  test('the control: every probe that sends plan headers sends a referenced value, as it is', async () => {
    for (const kind of Object.keys(SENDERS) as (keyof typeof SENDERS)[]) {
      const before = (await seen()).length;
      for (const job of await jobsOf(plan(kind))) {
        const result = await withEnv(`sent-by-${kind}`, () => executeJob(job, { region: 'local', log }));
        // The http2 probe's HTTP/2 attempts fail on this HTTP/1.1 server; that is data, not this test's subject.
        if (kind !== 'http2') assert.equal(result.error, null, `${job.jobId}: ${result.error?.message}`);
      }
      const heads = (await seen()).slice(before);
      assert.ok(
        heads.some((head) => head.includes(`\r\nx-probe: sent-by-${kind}\r\n`)),
        `${kind}: the header arrived (${heads.length} heads)`,
      );
    }
  });

  for (const [what, value] of [
    ['CR LF', 'a\r\nX-Injected: yes'],
    ['a lone LF', 'a\nX-Injected: yes'],
    ['U+010A (sent one byte per character, it was LF)', '\u010aX-Injected: yes'],
  ] as const) {
    test(`a variable holding ${what}: SECRET_INVALID from every probe, and not one byte reaches the server`, async () => {
      const [before, connections] = [(await seen()).length, accepted()];
      for (const kind of Object.keys(SENDERS) as (keyof typeof SENDERS)[]) {
        for (const job of await jobsOf(plan(kind))) {
          const result = await withEnv(value, () => executeJob(job, { region: 'local', log }));
          assert.equal(result.error?.code, 'SECRET_INVALID', `${job.jobId}: ${result.error?.message}`);
          assert.equal(result.summary.requests, 0);
        }
      }
      assert.equal(accepted(), connections, 'no connection was opened');
      const heads = await seen();
      assert.equal(heads.length, before);
      assert.ok(!heads.some((head) => /x-injected/i.test(head)));
    });
  }

  test('a job edited in Redis with CR LF in a header value is refused as invalid, before it connects', async () => {
    const connections = accepted();
    for (const kind of Object.keys(SENDERS) as (keyof typeof SENDERS)[]) {
      const [job] = await jobsOf(plan(kind, 'plain'));
      const edited = {
        ...job,
        target: { ...job.target, headers: { 'x-probe': 'a\r\nX-Injected: yes' } },
      } as JobPayload;
      await assert.rejects(executeJob(edited, { region: 'local', log }), (err: Error) => {
        assert.ok(err instanceof InvalidJobError, String(err));
        assert.match(err.message, /target\.headers\.x-probe: holds a carriage return/);
        return true;
      });
    }
    assert.equal(accepted(), connections);
  });

  describe('references in a URL, through the CLI', () => {
    let dir: string;
    before(async () => {
      dir = tempDir('probefleet-hostile-input-');
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    test('user:password and a query value reach the server (Basic, percent-encoded); reports hold them redacted', async () => {
      const secret = `pf-url-secret-${process.pid}`;
      const [host] = echo().split('//')[1].split('/');
      const file = await writePlan(`
name: url-secrets
targets:
  - name: echo
    url: "http://robot:\${env:PF_URL_PASS}@${host}/q?token=\${env:PF_URL_TOKEN}&page=2"
experiments: [{ probe: reuse, requests: 1, modes: [reused] }]
`);
      const before = (await seen()).length;
      const files = ['json', 'html', 'markdown', 'csv'].map((format) => [format, path.join(dir, `report.${format}`)]);
      const { code, stdout, stderr } = await runCli(['run', file, ...files.map(([f, p]) => `--${f}=${p}`)], {
        env: { PF_URL_PASS: secret, PF_URL_TOKEN: `${secret}\r\nX-Injected: yes` },
      });
      assert.equal(code, 0, stderr);
      const [head] = (await seen()).slice(before);
      assert.ok(
        head.startsWith(`GET /q?token=${encodeURIComponent(`${secret}\r\nX-Injected: yes`)}&page=2 HTTP/1.1\r\n`),
        head,
      );
      assert.ok(
        head.includes(`\r\nauthorization: Basic ${Buffer.from(`robot:${secret}`).toString('base64')}\r\n`),
        head,
      );
      assert.ok(!/\r\nx-injected/i.test(head));
      for (const [format, written] of files) {
        const text = await readFile(written, 'utf8');
        assert.ok(!text.includes(secret), `${format}: no secret`);
        const shownUrl = `http://[redacted]@${host}/q?token=[redacted]&page=2`;
        if (format === 'json') assert.ok(text.includes(shownUrl), format);
        if (format === 'html') assert.ok(text.includes(shownUrl.replace('&', '&amp;')), format);
      }
      assert.ok(!stdout.includes(secret));
    });

    test('a certificate subject and issuer full of escape sequences: escaped in the terminal, Markdown, HTML and CSV', async () => {
      const file = await writePlan(`
name: escapes
targets:
  - { name: evil, url: "${lab.url('escape-cert')}/", tls: { insecure: true } }
  - { name: down, url: "${lab.url('refused')}/" }
experiments:
  - { probe: tls, targets: [evil], samples: 2, versions: ["1.3"], resumption: false }
  - { probe: reuse, targets: [down], requests: 1, modes: [reused], timeoutMs: 2000 }
`);
      const files = ['json', 'html', 'markdown', 'csv'].map((format) => [format, path.join(dir, `escapes.${format}`)]);
      const { code, stdout, stderr } = await runCli(['run', file, ...files.map(([f, p]) => `--${f}=${p}`)]);
      assert.equal(code, 1, `the refused target's job fails the run\n${stderr}`);
      const outputs: [string, string][] = [['terminal', stdout]];
      for (const [format, written] of files) outputs.push([format, await readFile(written, 'utf8')]);
      for (const [format, text] of outputs) {
        // CSV ends its rows with CR LF (RFC 4180); no other control character anywhere.
        const lines = format === 'csv' ? text.replace(/\r\n/g, '\n') : text;
        assert.ok(!UNSAFE.test(lines), `${format}: ${JSON.stringify(lines.match(UNSAFE))} at ${lines.search(UNSAFE)}`);
      }
      // The finding and the decision table say what the certificate holds, escaped.
      const escaped = 'CN=\\x1b[2J\\x1b[31mEVIL\\x1b[0m\\r';
      const findings = stdout.slice(stdout.indexOf('\nFindings\n'));
      assert.ok(findings.includes(`[warning] CERT_EXPIRES_SOON (evil, local): certificate ${escaped}`), findings);
      assert.ok(findings.includes(`(issuer ${escaped}`), findings);
      assert.ok(stdout.slice(stdout.indexOf('\nDecision table\n')).includes('\\x1b]0;pwned\\x07'), stdout);
      // The JSON is data: the same value once parsed, with every unsafe character written as \uXXXX.
      const json = JSON.parse(outputs.find(([f]) => f === 'json')![1]);
      const finding = json.findings.find((f: { code: string }) => f.code === 'CERT_EXPIRES_SOON');
      assert.ok(
        finding.evidence.includes('CN=\x1b[2J\x1b[31mEVIL\x1b[0m\r, O=\x1b]0;pwned\x07'),
        'the JSON keeps the value',
      );
    });
  });
});

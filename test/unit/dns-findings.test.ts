// The dns probe's finding rules (worker/probes/dns-findings.ts) as a table: a job's lookups in,
// the finding out or none. Each case starts from a name that answers quickly and always the same
// and changes one thing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRules } from '../../contracts/findings.js';
import type { DnsLookup } from '../../contracts/probes/dns.js';
import { DNS_RULES, dnsAnswersChange, dnsSlow, type DnsFindingInput } from '../../worker/probes/dns-findings.js';
import { type RuleCase, testRules } from '../helpers/finding-rules.js';

const where = { region: 'local', target: 'api', probe: 'dns' };

const lookup = (seq: number, changes: Partial<DnsLookup> = {}): DnsLookup => ({
  seq,
  ms: 2.6,
  fromCache: false,
  outcome: 'answer',
  answers: ['192.0.2.10'],
  ttl: 300,
  ...changes,
});

/** Answer sets as the probe counts them (details.answerSets): sorted addresses, the most frequent first. */
function answerSets(samples: DnsLookup[]): Pick<DnsFindingInput['details'], 'distinctAnswerSets' | 'answerSets'> {
  const sets = new Map<string, { answers: string[]; lookups: number; firstSeq: number }>();
  for (const s of samples.filter((l) => !l.error)) {
    const answers = [...s.answers].sort();
    const set = sets.get(answers.join(' ')) ?? { answers, lookups: 0, firstSeq: s.seq };
    set.lookups++;
    sets.set(answers.join(' '), set);
  }
  return {
    distinctAnswerSets: sets.size,
    answerSets: [...sets.values()].sort((a, b) => b.lookups - a.lookups || a.firstSeq - b.firstSeq),
  };
}

function input(
  samples: DnsLookup[] = [0, 1, 2, 3].map((seq) => lookup(seq)),
  changes: Partial<Omit<DnsFindingInput, 'details'>> = {},
): DnsFindingInput {
  return {
    variant: { resolver: '192.0.2.53:53', recordType: 'A', cache: 'cold' },
    slowMs: 100,
    ...changes,
    details: { name: 'api.example', samples, ...answerSets(samples) },
  };
}

const slow = (ms: number[]) => ms.map((value, seq) => lookup(seq, { ms: value }));
const rotating = (addresses: string[][]) => addresses.map((answers, seq) => lookup(seq, { answers }));
const failed = (seq: number): DnsLookup =>
  lookup(seq, {
    ms: 5000,
    outcome: 'timeout',
    answers: [],
    ttl: null,
    error: { code: 'DNS_FAILED', message: 'timeout' },
  });

const cases: RuleCase<DnsFindingInput>[] = [
  {
    name: 'cold lookups with a median over slowMs',
    rule: dnsSlow,
    input: input(slow([150, 160, 152, 400])),
    expected: {
      code: 'DNS_SLOW',
      evidence:
        /^cold lookups of api\.example \(A\) from 192\.0\.2\.53:53 took 156\.0 ms \(median of 4; p95 364\.0 ms\), over slowMs 100 ms$/,
      data: { resolver: '192.0.2.53:53', recordType: 'A', medianMs: 156, p95Ms: 364, lookups: 4, slowMs: 100 },
    },
  },
  {
    name: 'one slow lookup among quick ones is no slow name',
    rule: dnsSlow,
    input: input(slow([2, 3, 2, 900])),
  },
  {
    name: 'warm lookups are not judged (a cache hit says nothing about the resolver)',
    rule: dnsSlow,
    input: input(slow([150, 160, 152]), { variant: { resolver: 'system', recordType: 'A', cache: 'warm' } }),
  },
  {
    name: 'failed lookups are not lookup times (a timeout is its own failure)',
    rule: dnsSlow,
    input: input([failed(0), failed(1), lookup(2)]),
  },
  {
    name: 'answers that rotate among addresses',
    rule: dnsAnswersChange,
    input: input(rotating([['192.0.2.10'], ['192.0.2.11'], ['192.0.2.10'], ['192.0.2.12'], ['192.0.2.13']])),
    expected: {
      code: 'DNS_ANSWERS_CHANGE',
      evidence:
        /^4 different answers for api\.example \(A\) from 192\.0\.2\.53:53 in 5 cold lookups: 192\.0\.2\.10 \(2\), 192\.0\.2\.11 \(1\), 192\.0\.2\.12 \(1\) and 1 more$/,
      data: { resolver: '192.0.2.53:53', recordType: 'A', answerSets: 4, lookups: 5 },
    },
  },
  {
    name: 'an answer that comes and goes (no data between)',
    rule: dnsAnswersChange,
    input: input([lookup(0), lookup(1, { outcome: 'nodata', answers: [], ttl: null })], {
      variant: { resolver: 'system', recordType: 'AAAA', cache: 'warm' },
    }),
    expected: {
      code: 'DNS_ANSWERS_CHANGE',
      evidence:
        /^2 different answers for api\.example \(AAAA\) from system in 2 warm lookups: 192\.0\.2\.10 \(1\), no data \(1\)$/,
      data: { resolver: 'system', recordType: 'AAAA', answerSets: 2, lookups: 2 },
    },
  },
  {
    name: 'the same addresses in another order (round robin) are the same answer',
    rule: dnsAnswersChange,
    input: input(
      rotating([
        ['192.0.2.10', '192.0.2.11'],
        ['192.0.2.11', '192.0.2.10'],
      ]),
    ),
  },
];

testRules('DNS_RULES', DNS_RULES, cases, where);

test('a name that answers quickly and the same each time gives no finding', () => {
  assert.deepEqual(applyRules(DNS_RULES, input(), where), []);
});

// The table-driven shape of the per-probe finding rules' tests: a case names a rule, its input,
// and the finding it makes (or none), at one place.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Finding, FindingCode, FindingPlace, FindingRule } from '../../contracts/findings.js';

export interface RuleCase<I> {
  name: string;
  rule: FindingRule<I>;
  input: I;
  /** The finding the rule makes, or undefined for none. */
  expected?: { code: FindingCode; evidence: RegExp; data: Finding['data'] };
}

/** One test per case: the rule's finding, where it is, its evidence and data, or none; and one
 * that every rule of the probe's list has a case that fires and one that does not, each rule
 * making its own code. */
export function testRules<I>(
  listName: string,
  rules: readonly FindingRule<I>[],
  cases: readonly RuleCase<I>[],
  where: FindingPlace,
): void {
  for (const { name, rule, input, expected } of cases) {
    test(`${rule.name}: ${name}`, () => {
      const found = rule(input, where);
      if (!expected) return assert.equal(found, undefined);
      assert.ok(found, 'a finding');
      assert.equal(found.code, expected.code);
      assert.deepEqual([found.region, found.target, found.probe], [where.region, where.target, where.probe]);
      assert.match(found.evidence, expected.evidence);
      assert.deepEqual(found.data, expected.data);
    });
  }
  test(`every rule in ${listName} has a case that fires and one that does not, and each makes its own code`, () => {
    for (const rule of rules) {
      const mine = cases.filter((c) => c.rule === rule);
      assert.ok(mine.some((c) => c.expected) && mine.some((c) => !c.expected), rule.name);
    }
    const codes = new Set(cases.flatMap((c) => (c.expected ? [c.expected.code] : [])));
    assert.equal(codes.size, rules.length);
  });
}

// Per target: how long looking its name up took from each region, per resolver and record type,
// cold (a query each) beside warm (a client cache honouring the TTL), and what the name resolved to.
import type { ResultOf } from '../../../contracts/result.js';
import type { ReportBlock, ReportSection } from '../document.js';
import { formatMs } from '../format.js';
import { byPlace, byTarget, errorsCell } from './place.js';

type DnsResult = ResultOf<'dns'>;

/** The cold and the warm job of one region, resolver and record type. */
interface Row {
  region: string;
  resolver: string;
  recordType: string;
  cold?: DnsResult;
  warm?: DnsResult;
}

function rowsOf(results: DnsResult[]): Row[] {
  const rows = new Map<string, Row>();
  for (const r of [...results].sort(byPlace)) {
    const { resolver, recordType, cache } = r.variant;
    const key = `${r.region} ${resolver} ${recordType}`;
    const row = rows.get(key) ?? { region: r.region, resolver, recordType };
    row[cache] = r;
    rows.set(key, row);
  }
  return [...rows.values()];
}

/** "127.0.0.1"; "127.0.0.1 (12), 127.0.0.2 (8)" when the answers changed (cold and warm lookups
 * together, the most frequent first); "no data"; "-". */
function answersCell(row: Row): string {
  const sets = [row.cold, row.warm].flatMap((r) => r?.details?.answerSets ?? []);
  const counts = new Map<string, number>();
  for (const set of sets) {
    const text = set.answers.length > 0 ? set.answers.join(' ') : 'no data';
    counts.set(text, (counts.get(text) ?? 0) + set.lookups);
  }
  if (counts.size === 0) return '-';
  if (counts.size === 1) return [...counts.keys()][0];
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([text, n]) => `${text} (${n})`)
    .join(', ');
}

/** Queries sent of lookups made, warm: how often the cache was missed. */
const queriesCell = (r: DnsResult | undefined) =>
  r?.details ? `${r.details.queries}/${r.details.queries + r.details.cacheHits}` : '-';

function targetBlock(target: string, results: DnsResult[]): ReportBlock {
  const name = results.find((r) => r.details)?.details?.name;
  return {
    kind: 'table',
    title: `DNS lookups of ${name ?? target} (target ${target}): cold = a query each, warm = a client cache honouring the TTL`,
    table: {
      headers: [
        'region',
        'resolver',
        'type',
        'cold p50',
        'cold p95',
        'warm p50',
        'warm p95',
        'warm queries',
        'answers',
        'errors',
      ],
      align: 'lllrrrrrlr',
      breakable: [1, 8],
      rows: rowsOf(results).map((row) => [
        row.region,
        row.resolver,
        row.recordType,
        formatMs(row.cold?.details?.lookupMs?.p50),
        formatMs(row.cold?.details?.lookupMs?.p95),
        formatMs(row.warm?.details?.lookupMs?.p50),
        formatMs(row.warm?.details?.lookupMs?.p95),
        queriesCell(row.warm),
        answersCell(row),
        // Cold / warm; a failed job's code and message are in "Jobs that did not finish cleanly".
        [row.cold, row.warm].flatMap((r) => (r ? [errorsCell(r)] : [])).join(' / '),
      ]),
    },
  };
}

export function dnsView(results: DnsResult[]): ReportSection {
  return {
    heading: 'DNS lookups',
    blocks: byTarget([...results].sort(byPlace)).map(([target, mine]) => targetBlock(target, mine)),
  };
}

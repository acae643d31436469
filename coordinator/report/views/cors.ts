// The lecture's CORS section: per origin, what the preflight allowed and what the simple GET
// still returned (and whether the server's log shows it ran).
import type { ResultOf } from '../../../contracts/result.js';
import type { ReportSection } from '../document.js';
import { formatCount } from '../format.js';
import { byPlace } from './place.js';

const yesNo = (value: boolean | undefined) => (value === undefined ? '-' : value ? 'yes' : 'no');

export function corsView(results: ResultOf<'cors'>[]): ReportSection {
  const sorted = [...results].sort(byPlace);
  const asked = sorted.find((r) => r.details)?.details;
  return {
    heading: 'CORS',
    blocks: [
      {
        kind: 'table',
        title: `CORS: a preflight (OPTIONS asking for ${asked?.method ?? 'the method'}${asked?.requestHeaders.length ? ` with ${asked.requestHeaders.join(', ')}` : ''}) and a simple GET per origin; "readable" is what a browser would let the page see`,
        table: {
          headers: [
            'region',
            'target',
            'role',
            'origin',
            'preflight',
            'allow-origin',
            'method',
            'headers',
            'max-age',
            'GET',
            'bytes',
            'readable',
            'ran on server',
          ],
          align: 'llllrlllrrrll',
          rows: sorted.flatMap((r) =>
            (r.details?.origins ?? []).map((o) => [
              r.region,
              r.target,
              o.role,
              o.origin,
              o.preflight.error ? o.preflight.error.code : String(o.preflight.status ?? '-'),
              o.preflight.allowOrigin ?? '-',
              o.verdict.preflightAllowsOrigin ? yesNo(o.verdict.methodAllowed) : '-',
              o.verdict.preflightAllowsOrigin
                ? o.verdict.headersMissing.length === 0
                  ? 'yes'
                  : `missing ${o.verdict.headersMissing.join(', ')}`
                : '-',
              o.preflight.maxAge ?? '-',
              o.get.error ? o.get.error.code : String(o.get.status ?? '-'),
              formatCount(o.get.bodyBytes),
              yesNo(o.verdict.getReadable),
              yesNo(o.get.ranOnServer),
            ]),
          ),
        },
        notes: sorted.flatMap((r) => {
          const log = r.details?.serverLog;
          return log
            ? [
                `${r.target} (${r.region}): server log ${log.path} ${log.error ? `could not be read: ${log.error.code}` : `answered ${log.status}`}`,
              ]
            : [];
        }),
      },
    ],
  };
}

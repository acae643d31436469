// The CORS section of the HTTP performance lecture (docs/probes.md#sources): per origin, what the
// preflight allowed and what the simple GET still returned (and whether the server's log shows it
// ran).
import type { ResultOf } from '../../../contracts/result.js';
import type { ReportSection } from '../document.js';
import { formatCount } from '../format.js';
import { byPlace } from './place.js';

const yesNo = (value: boolean | undefined) => (value === undefined ? '-' : value ? 'yes' : 'no');

/** What this job's preflight asked for: its experiment's method and request headers. */
const asks = (r: ResultOf<'cors'>) =>
  r.details
    ? `${r.details.method}${r.details.requestHeaders.length > 0 ? ` + ${r.details.requestHeaders.join(', ')}` : ''}${r.details.credentials ? ', credentials' : ''}`
    : '-';

export function corsView(results: ResultOf<'cors'>[]): ReportSection {
  const sorted = [...results].sort(byPlace);
  return {
    heading: 'CORS',
    blocks: [
      {
        kind: 'table',
        title:
          'CORS: a preflight (OPTIONS asking for the method and headers of its experiment, "asks") and a simple GET per origin; "readable" is what a browser would let the page see',
        table: {
          headers: [
            'region',
            'target',
            'asks',
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
          align: 'lllllrlllrrrll',
          breakable: [2, 4, 6, 8],
          rows: sorted.flatMap((r) =>
            (r.details?.origins ?? []).map((o) => [
              r.region,
              r.target,
              asks(r),
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

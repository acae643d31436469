// The HTTP/2 section of the HTTP performance lecture (docs/probes.md#sources), measured: header
// bytes per request over HTTP/1.1 and HTTP/2 (first request and repeats), what the server
// negotiated, and N concurrent requests over one HTTP/2 connection against a browser-sized
// HTTP/1.1 pool.
import type { H2cAttempt, MultiplexRun } from '../../../contracts/probes/http2.js';
import type { ResultOf } from '../../../contracts/result.js';
import type { Bar, BarChart, ReportBlock, ReportSection } from '../document.js';
import { plural } from '../../../common/plural.js';
import { formatMs } from '../format.js';
import { barLabeller, byPlace, byTarget, errorsCell } from './place.js';

type HeaderBytes = { request: number; response: number } | null | undefined;

const bytes = (b: HeaderBytes) => (b ? `${b.request} / ${b.response} B` : '-');
const yesNo = (attempt: H2cAttempt | null | undefined) => (attempt ? (attempt.supported ? 'yes' : 'no') : '-');

function headerBytesChart(results: ResultOf<'http2'>[]): BarChart {
  const label = barLabeller(results);
  const kinds: [string, string, (d: NonNullable<ResultOf<'http2'>['details']>) => HeaderBytes][] = [
    ['HTTP/1.1', 'h1', (d) => d.h1HeaderBytes],
    ['HTTP/2 first', 'h2-first', (d) => d.h2HeaderBytesFirst],
    ['HTTP/2 repeat', 'h2-repeat', (d) => d.h2HeaderBytesRepeat],
  ];
  return {
    id: 'http2-header-bytes',
    title: 'Header bytes per request, HTTP/1.1 vs HTTP/2',
    description:
      'Bytes of the request and response headers on the wire: the HTTP/1.1 heads, and the HTTP/2 HEADERS frames of the first ' +
      'request on a new connection and of the repeats after it (median), when HPACK sends indexes into the table the first filled.',
    unit: 'bytes',
    groups: byTarget(results).map(([target, mine]) => ({
      label: target,
      bars: mine.flatMap((r) =>
        (['request', 'response'] as const).flatMap((side) =>
          kinds.flatMap(([name, series, of]): Bar[] => {
            const measured = r.details ? of(r.details) : null;
            return measured
              ? [{ label: label(r, `${side} · ${name}`), series, value: measured[side], text: `${measured[side]} B` }]
              : [];
          }),
        ),
      ),
    })),
  };
}

function multiplexChart(results: ResultOf<'http2'>[]): BarChart {
  const label = barLabeller(results);
  const bar = (r: ResultOf<'http2'>, name: string, series: string, run: MultiplexRun): Bar => ({
    label: label(r, name),
    series,
    value: run.totalMs,
    text: `${formatMs(run.totalMs)} over ${plural(run.connectionsOpened, 'connection')}${run.errors > 0 ? `, ${plural(run.errors, 'error')}` : ''}`,
  });
  return {
    id: 'http2-concurrent-time',
    title: 'Concurrent requests: HTTP/1.1 pool vs one HTTP/2 connection',
    description:
      'Time from connecting to the last byte of N concurrent requests: over a browser-sized HTTP/1.1 pool, and over one HTTP/2 connection.',
    unit: 'ms',
    groups: byTarget(results).map(([target, mine]) => ({
      label: `${target} (${mine[0].details?.multiplexing.requests ?? '-'} requests)`,
      bars: mine.flatMap((r) => {
        const m = r.details?.multiplexing;
        return [
          ...(m?.h1 ? [bar(r, 'HTTP/1.1', 'h1', m.h1)] : []),
          ...(m?.h2 ? [bar(r, 'HTTP/2', 'h2-first', m.h2)] : []),
        ];
      }),
    })),
  };
}

export function http2View(results: ResultOf<'http2'>[]): ReportSection {
  const sorted = [...results].sort(byPlace);
  const headerRows = sorted.map((r) => {
    const d = r.details;
    return [
      r.region,
      r.target,
      d?.alpn ? (d.alpn.selected ?? 'none') : '-',
      bytes(d?.h1HeaderBytes),
      bytes(d?.h2HeaderBytesFirst),
      bytes(d?.h2HeaderBytesRepeat),
      yesNo(d?.h2cPriorKnowledge),
      yesNo(d?.h2cUpgrade),
    ];
  });
  const muxRows = sorted.map((r) => {
    const m = r.details?.multiplexing;
    return [
      r.region,
      r.target,
      String(m?.requests ?? '-'),
      m?.h1 ? String(m.h1.connectionsOpened) : '-',
      formatMs(m?.h1?.totalMs),
      m?.h2 ? String(m.h2.connectionsOpened) : '-',
      formatMs(m?.h2?.totalMs),
      errorsCell(r),
    ];
  });
  const answers = sorted.flatMap((r) =>
    [
      r.details?.h2cPriorKnowledge &&
        `${r.region} ${r.target}, h2c prior knowledge: ${r.details.h2cPriorKnowledge.answer}`,
      r.details?.h2cUpgrade && `${r.region} ${r.target}, Upgrade: h2c: ${r.details.h2cUpgrade.answer}`,
    ].filter((line): line is string => Boolean(line)),
  );
  const answerBlock: ReportBlock[] =
    answers.length > 0 ? [{ kind: 'text', text: 'What the servers answered to h2c', notes: answers }] : [];
  return {
    heading: 'HTTP/1.1 vs HTTP/2',
    blocks: [
      { kind: 'chart', chart: headerBytesChart(sorted) },
      { kind: 'chart', chart: multiplexChart(sorted) },
      {
        kind: 'table',
        title:
          'HTTP/1.1 vs HTTP/2: header bytes per request (request / response; h2 = HEADERS frames, repeat = median of the requests after the first)',
        table: {
          headers: [
            'region',
            'target',
            'alpn',
            'h1.1 heads',
            'h2 first',
            'h2 repeat',
            'h2c prior knowledge',
            'h2c upgrade',
          ],
          align: 'lllrrrll',
          rows: headerRows,
        },
      },
      ...answerBlock,
      {
        kind: 'table',
        title: 'Concurrent requests: HTTP/1.1 (a browser-sized pool) vs one HTTP/2 connection, connecting included',
        table: {
          headers: ['region', 'target', 'requests', 'h1.1 conns', 'h1.1 total', 'h2 conns', 'h2 total', 'errors'],
          align: 'llrrrrrr',
          rows: muxRows,
        },
      },
    ],
  };
}

// The report formats' building blocks: HTML escaping by construction, Markdown and CSV
// escaping, and the SVG bar chart's geometry and accessible text.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BarChart } from '../../coordinator/report/document.js';
import { escapeHtml, html, trustedHtml } from '../../coordinator/report/html-template.js';
import { escapeMarkdown, escapeMarkdownInline } from '../../coordinator/report/markdown.js';
import { chartDescription, renderBarChart } from '../../coordinator/report/svg-chart.js';

const HOSTILE = `</style><script>alert(1)</script><img src="http://127.0.0.1:9/x.png" onerror='alert(2)'>&`;

describe('html template', () => {
  test('escapes every interpolated string, in content and in attributes', () => {
    const page = html`<p title="${HOSTILE}">${HOSTILE}</p>`.markup;
    assert.ok(!page.includes('<script'), page);
    assert.ok(!page.includes('<img'), page);
    assert.ok(!/title="[^"]*"[^>]*onerror/.test(page), 'the attribute value cannot be closed early');
    assert.equal(page, `<p title="${escapeHtml(HOSTILE)}">${escapeHtml(HOSTILE)}</p>`);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  test('nests markup made by html, joins lists, drops nothing-values, prints numbers', () => {
    const items = ['a<b', 'c'].map((t) => html`<li>${t}</li>`);
    assert.equal(
      html`<ul>${items}</ul>${null}${undefined}${false}${42.5}`.markup,
      '<ul><li>a&lt;b</li><li>c</li></ul>42.5',
    );
    assert.equal(html`<style>${trustedHtml('a > b {}')}</style>`.markup, '<style>a > b {}</style>');
  });

  test('refuses a number that is not finite (a chart coordinate gone wrong)', () => {
    assert.throws(() => html`<rect width="${Number.NaN}"/>`, /not a finite number/);
  });
});

describe('markdown escaping', () => {
  const cases: [string, string][] = [
    ['plain words, 1.5 ms', 'plain words, 1.5 ms'],
    ['a | b', 'a \\| b'],
    ['<img src=x onerror=alert(1)>', '&lt;img src=x onerror=alert(1)&gt;'],
    ['[click](http://127.0.0.1:9/) ![i](x)', '\\[click\\](http://127.0.0.1:9/) !\\[i\\](x)'],
    ['*bold* `code` ~~gone~~ \\', '\\*bold\\* \\`code\\` \\~\\~gone\\~\\~ \\\\'],
    ['SERVER_CLOSES_EVERY_CONNECTION and _emphasis_', 'SERVER_CLOSES_EVERY_CONNECTION and \\_emphasis\\_'],
    ['two\nlines\r\n here', 'two lines here'],
    ['-42.78 ms', '-42.78 ms'],
  ];
  for (const [input, expected] of cases) {
    test(`inline: ${JSON.stringify(input)}`, () => assert.equal(escapeMarkdownInline(input), expected));
  }
  test('a line start that would open a heading or a list is escaped', () => {
    assert.equal(escapeMarkdown('# not a heading'), '\\# not a heading');
    assert.equal(escapeMarkdown('- not a list'), '\\- not a list');
    assert.equal(escapeMarkdown('1. not a list'), '1\\. not a list');
    assert.equal(escapeMarkdown('an # inside'), 'an # inside');
  });
});

describe('svg bar chart', () => {
  const chart: BarChart = {
    id: 'test-chart',
    title: 'Cost <per> region',
    description: 'What it costs.',
    unit: 'ms',
    groups: [
      {
        label: 'https',
        bars: [
          { label: 'eu-west', series: 'eu-west', value: 16.2, interval: [13.3, 20.3], text: '16.2 ms (13.3 .. 20.3)' },
          { label: 'ap-south', series: 'ap-south', value: -4, interval: [-6, -1], text: '-4.00 ms' },
        ],
      },
      { label: 'empty', bars: [] },
      { label: 'http', bars: [{ label: 'eu-west', series: 'eu-west', value: 0, text: 'failed: CONNECTION_REFUSED' }] },
    ],
  };
  const svg = renderBarChart(chart, 'c1').markup;
  const all = (re: RegExp) => [...svg.matchAll(re)];

  test('one rect, label and value text per bar; empty groups are left out', () => {
    assert.equal(all(/<rect class="bar /g).length, 3);
    assert.equal(all(/class="bar-label"/g).length, 3);
    assert.deepEqual(
      all(/class="value-label"[^>]*>([^<]*)</g).map((m) => m[1]),
      ['16.2 ms (13.3 .. 20.3)', '-4.00 ms', 'failed: CONNECTION_REFUSED'],
    );
    assert.equal(all(/class="group-label"/g).length, 2);
    assert.equal(all(/<g class="interval">/g).length, 2);
  });

  test('a series keeps its colour across groups', () => {
    const classes = all(/<rect class="bar (series-\d)"/g).map((m) => m[1]);
    assert.deepEqual(classes, ['series-0', 'series-1', 'series-0']);
  });

  test('the axis spans zero, the negative bar and every interval, in whole ticks', () => {
    const ticks = all(/class="tick-label"[^>]*>([^<]*)</g).map((m) => m[1]);
    assert.equal(ticks[0], '-10 ms');
    assert.equal(ticks.at(-1), '30 ms');
    assert.ok(ticks.includes('0 ms'));
    assert.equal(all(/<line class="zero"/g).length, 1);
    // The negative bar ends at zero: its x plus width is the zero line's x.
    const zeroX = Number(/<line class="zero" x1="([\d.]+)"/.exec(svg)![1]);
    const negative = /<rect class="bar series-1" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/.exec(svg)!;
    assert.ok(Math.abs(Number(negative[1]) + Number(negative[2]) - zeroX) < 0.2, `${negative[0]} vs zero at ${zeroX}`);
  });

  test('an image to assistive technology, named by its title and described with every number', () => {
    assert.match(svg, /^<svg [^>]*role="img" aria-labelledby="c1-title c1-desc"/);
    assert.match(svg, /<title id="c1-title">Cost &lt;per&gt; region<\/title>/);
    assert.equal(
      chartDescription(chart),
      'What it costs. https: eu-west 16.2 ms (13.3 .. 20.3); ap-south -4.00 ms. http: eu-west failed: CONNECTION_REFUSED.',
    );
    assert.ok(svg.includes(`<desc id="c1-desc">${escapeHtml(chartDescription(chart))}</desc>`));
  });

  test('all zeros still make an axis; counts have whole ticks', () => {
    const zeros = renderBarChart(
      { ...chart, unit: 'count', groups: [{ label: 'g', bars: [{ label: 'a', series: 'a', value: 0, text: '0' }] }] },
      'c2',
    ).markup;
    assert.deepEqual(
      [...zeros.matchAll(/class="tick-label"[^>]*>([^<]*)</g)].map((m) => m[1]),
      ['0', '1'],
    );
  });
});

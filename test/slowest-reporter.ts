// A node:test reporter that prints, once every file has run, the ten slowest tests and the ten
// slowest files (a file's time: its top-level tests and suites, hooks within them included), so a
// slow suite says where its minutes went. It runs beside the spec reporter (test/run-tests.ts).
import path from 'node:path';

interface TestEvent {
  type: string;
  data: {
    name: string;
    nesting: number;
    file?: string;
    details?: { duration_ms?: number; type?: string };
  };
}

const SHOWN = 10;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export default async function* slowest(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const tests: { name: string; file: string; ms: number }[] = [];
  const files = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, nesting, file, details } = event.data;
    const ms = details?.duration_ms ?? 0;
    const where = file ? path.relative(process.cwd(), file) : '(no file)';
    if (nesting === 0) files.set(where, (files.get(where) ?? 0) + ms);
    if (details?.type !== 'suite') tests.push({ name, file: where, ms });
  }
  const rows = (list: [string, number][]) =>
    list.map(([what, ms]) => `  ${seconds(ms).padStart(8)}  ${what}\n`).join('');
  yield `\nSlowest ${SHOWN} tests\n`;
  yield rows(
    tests
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN)
      .map((t) => [`${t.name} (${t.file})`, t.ms]),
  );
  yield `Slowest ${SHOWN} files\n`;
  yield rows([...files].sort((a, b) => b[1] - a[1]).slice(0, SHOWN));
}

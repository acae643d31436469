// A one-line progress bar on stderr when it is a terminal; silent otherwise (CI logs, pipes).
export interface Progress {
  start(total: number): void;
  step(label: string): void;
  done(): void;
}

export function progressFor(stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { start() {}, step() {}, done() {} };
  let total = 0;
  let finished = 0;
  const width = 24;
  const draw = (label: string) => {
    const filled = total === 0 ? width : Math.round((finished / total) * width);
    const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${finished}/${total} ${label}`;
    stream.write(`\r\x1b[2K${line.slice(0, (stream.columns || 80) - 1)}`);
  };
  return {
    start(n) {
      total = n;
      draw('');
    },
    step(label) {
      finished++;
      draw(label);
    },
    done() {
      stream.write('\r\x1b[2K');
    },
  };
}

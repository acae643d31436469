// What a job's responses said in Alt-Svc (RFC 7838): where the server offers the same origin
// over another protocol, HTTP/3 (`h3=":443"; ma=86400`) above all. Probes note every response's
// header here; the result carries the distinct values, the analysis reads them.
/** Distinct values kept per job: a server that varies its header per response is still bounded. */
const MAX_VALUES = 16;

export class AltSvcLog {
  private readonly seen = new Set<string>();

  /** A response's Alt-Svc header: a string, several (repeated header), or none. */
  note(value: string | readonly string[] | undefined): void {
    if (value === undefined) return;
    for (const v of typeof value === 'string' ? [value] : value) {
      const trimmed = v.trim();
      if (trimmed && this.seen.size < MAX_VALUES) this.seen.add(trimmed);
    }
  }

  get values(): string[] {
    return [...this.seen];
  }
}

// HTML built so that nothing from a run can become markup: `html` escapes every value it
// interpolates unless the value is itself `Html` made by `html`. Target names, URLs, evidence and
// header values a server sent all pass through it, so a hostile value shows as text.

/** Markup that is safe to insert as is: only `html` makes it (and `trustedHtml` for constants). */
export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

/** What `html` accepts: markup, text to escape, numbers, nothing (null, undefined, false), or lists of these. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || typeof value === 'boolean') return '';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`not a finite number in HTML: ${value}`);
    return String(value);
  }
  return escapeHtml(value as string);
}

/** A tagged template: `html\`<td>${text}</td>\`` escapes `text`; nested `html` stays markup. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Markup written in this code base (the style sheet), never anything from a run. */
export function trustedHtml(markup: string): Html {
  return new Html(markup);
}

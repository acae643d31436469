// Secrets in plans: a header value, or a URL's user:password or query value, may refer to an
// environment variable of the worker that runs the job (`${env:API_TOKEN}`, also inside text:
// `Bearer ${env:API_TOKEN}`). The reference is what travels in jobs and sits in Redis; the worker
// puts the value in when it sends the request (worker/secrets.ts). Reports, `plan expand` and
// logs show REDACTED where a value may be a secret. Also here: what a header value may hold at
// all, since a plan's value and a worker's variable must both be sendable as they are.

/** What a report, a log line or `plan expand` shows in place of a value that may be a secret. */
export const REDACTED = '[redacted]';

/** Headers that carry credentials: a plan must give their values as references. */
export const SENSITIVE_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'x-auth-token',
  'x-access-token',
] as const;

/** Query parameters that carry credentials (compared without case, "-" and "_"): a plan must give their values as references. */
export const SENSITIVE_QUERY_PARAMS = [
  'apikey',
  'key',
  'token',
  'accesstoken',
  'authtoken',
  'auth',
  'password',
  'passwd',
  'pwd',
  'secret',
  'clientsecret',
  'signature',
  'sig',
  'jwt',
  'sessionid',
] as const;

/** A whole value that is one reference to a secret the worker has: `${env:NAME}` (the variable's
 * value), or `${file:/absolute/path}` (the file's content; a worker reads only files under its
 * PROBEFLEET_SECRET_FILE_DIRS). For values that are whole secrets: a client key, its passphrase. */
export type WholeReference = { kind: 'env'; name: string } | { kind: 'file'; path: string };

export function wholeReference(value: string): WholeReference | undefined {
  const env = /^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value);
  if (env) return { kind: 'env', name: env[1] };
  const file = /^\$\{file:(\/[^}\0]*)\}$/.exec(value);
  return file ? { kind: 'file', path: file[1] } : undefined;
}

/** `${env:NAME}`; NAME as a POSIX shell would take it. */
export const ENV_REFERENCE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function isSensitiveHeader(name: string): boolean {
  return (SENSITIVE_HEADERS as readonly string[]).includes(name.toLowerCase());
}

export function isSensitiveQueryParam(name: string): boolean {
  return (SENSITIVE_QUERY_PARAMS as readonly string[]).includes(name.toLowerCase().replace(/[-_]/g, ''));
}

/** The environment variables a value refers to. */
export function envReferencesIn(value: string): string[] {
  return [...value.matchAll(ENV_REFERENCE)].map((m) => m[1]);
}

/** Holds a reference, or is a report's REDACTED in its place: either way no secret in clear. */
const referenced = (value: string) => envReferencesIn(value).length > 0 || value === REDACTED;

/** A "${" that does not start a reference: a typo for one, which would be sent as it is. */
function strayReferenceProblem(value: string): string | undefined {
  return value.replace(ENV_REFERENCE, '').includes('${')
    ? `"${value}" holds a "\${" that is not a reference: write \${env:NAME}`
    : undefined;
}

/**
 * Characters a header value may hold: tab, space and visible ASCII, and the Latin-1 letters
 * (RFC 9110's field-vchar and obs-text, without the C1 controls). Everything else is refused
 * rather than sent: CR and LF would end the header and start another (an injected header, or
 * a second request), NUL and other controls are refused or misread by servers, and a character
 * beyond Latin-1 would be cut to one byte (U+010A is sent as LF).
 */
const NOT_IN_HEADER_VALUE = /[^\t\x20-\x7e\xa0-\xff]/;

/** By code point: NUL, LF, CR. */
const CONTROL_NAMES: Record<number, string> = { 0: 'a NUL', 10: 'a line feed', 13: 'a carriage return' };

/** What makes a value unsendable as a header value, without quoting it (it may be a secret); undefined when it is sendable. */
export function headerValueCharsProblem(value: string): string | undefined {
  const at = value.search(NOT_IN_HEADER_VALUE);
  if (at === -1) return undefined;
  const code = value.codePointAt(at)!;
  const character = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  if (code > 0xff)
    return `holds ${character} at character ${at + 1}, beyond Latin-1: a header value is sent one byte per character, so it would be mangled (use ASCII, or percent-encode it)`;
  const breaksLine = code === 0x0a || code === 0x0d ? ', which would end the header and start another' : '';
  return `holds ${CONTROL_NAMES[code] ?? 'a control character'} (${character}) at character ${at + 1}${breaksLine}: a header value may not hold control characters`;
}

/** What is wrong with a header value in a plan, or undefined. */
export function headerValueProblem(name: string, value: string): string | undefined {
  const chars = headerValueCharsProblem(value);
  if (chars) return chars;
  const stray = strayReferenceProblem(value);
  if (stray) return stray;
  if (isSensitiveHeader(name) && !referenced(value)) {
    return `${name} carries credentials: give its value as \${env:NAME} (e.g. "Bearer \${env:API_TOKEN}"), set on the workers, so the secret never travels in jobs or sits in Redis`;
  }
  return undefined;
}

/** Stands for a reference while a URL is parsed: letters and digits, valid in every part of a URL. */
const PLACEHOLDER = 'probefleetreference';
const placeholder = (i: number) => `${PLACEHOLDER}${i}x`;
const holdsReference = (part: string) => part.includes(PLACEHOLDER) || part === REDACTED;

/** The URL with every reference replaced by `replace(name, i)`, as text (a reference holds ":", which splits user:password). */
export function replaceUrlReferences(value: string, replace: (variable: string, i: number) => string): string {
  let i = 0;
  return value.replace(ENV_REFERENCE, (_reference, variable: string) => replace(variable, i++));
}

/** The control characters the URL parser would drop or percent-encode silently; the plan refuses them instead. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const CONTROL_IN_URL = /[\x00-\x1f\x7f-\x9f]/;

/**
 * What is wrong with a URL of a plan as text: control characters, and where its references and
 * credentials stand (none: fine). It is parsed with each reference as a placeholder. A reference
 * may stand in the user:password part (sent as Basic authentication) or in a query value
 * (percent-encoded when it is put in), never where it could change where the request goes. A
 * password, a lone user name (a token) and a credential-named query parameter must be references.
 */
export function urlSecretsProblems(value: string): string[] {
  const control = value.search(CONTROL_IN_URL);
  if (control !== -1) {
    const code = value.charCodeAt(control).toString(16).toUpperCase().padStart(4, '0');
    return [`holds a control character (U+${code}) at character ${control + 1}: percent-encode it`];
  }
  const stray = strayReferenceProblem(value);
  if (stray) return [stray];
  let url: URL;
  try {
    url = new URL(replaceUrlReferences(value, (_variable, i) => placeholder(i)));
  } catch {
    return []; // not a URL at all: the URL schema says so
  }
  const problems: string[] = [];
  if ([url.host, url.pathname, url.hash, ...url.searchParams.keys()].some((part) => part.includes(PLACEHOLDER)))
    problems.push(
      'a reference (${env:NAME}) may stand only in the user:password part or in a query value, where it cannot change where the request goes',
    );
  const user = safeDecode(url.username);
  const password = safeDecode(url.password);
  if (password && !holdsReference(password))
    problems.push(
      'a password in a URL must be a reference: https://user:${env:PASSWORD}@host/, set on the workers, so the secret never travels in jobs or sits in Redis',
    );
  else if (user && !password && !holdsReference(user))
    problems.push(
      'credentials in a URL must be references: https://${env:TOKEN}@host/ or https://user:${env:PASSWORD}@host/, set on the workers',
    );
  for (const [name, paramValue] of url.searchParams) {
    if (isSensitiveQueryParam(name) && !holdsReference(paramValue))
      problems.push(
        `query parameter "${name}" carries credentials: give its value as \${env:NAME} (e.g. ?${name}=\${env:API_TOKEN}), set on the workers`,
      );
  }
  return problems;
}

/**
 * The URL as shown and stored outside the worker: user:password and every query value that is
 * a reference or a credential replaced by REDACTED. Textual, so it works on a URL that still
 * holds references, and leaves everything else as written.
 */
export function redactUrl(value: string): string {
  // The authority is optional: a plan's `lab:keepalive/path?query` has none.
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:)(\/\/[^/?#]*)?([^?#]*)(\?[^#]*)?(#.*)?$/s.exec(value);
  if (!match) return value;
  const [, scheme, authority = '', path, query, fragment] = match;
  const at = authority.lastIndexOf('@');
  const host = at === -1 ? authority : `//${REDACTED}@${authority.slice(at + 1)}`;
  const params = query
    ?.slice(1)
    .split('&')
    .map((param) => {
      const eq = param.indexOf('=');
      if (eq === -1) return param;
      const name = param.slice(0, eq);
      const paramValue = param.slice(eq + 1);
      return envReferencesIn(paramValue).length > 0 || isSensitiveQueryParam(safeDecode(name))
        ? `${name}=${REDACTED}`
        : param;
    });
  return `${scheme}${host}${path}${params ? `?${params.join('&')}` : ''}${fragment ?? ''}`;
}

/** Percent-decoded where it can be; as it is where it cannot (`%zz`). */
function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A target as shown and stored outside the worker: header names without values (any may be a
 * credential), the URL without user:password and without referenced or credential query values. */
export function redactTarget<T extends { url: string; headers?: Record<string, string>; proxy?: string }>(
  target: T,
): T {
  return redactSettings({ ...target, url: redactUrl(target.url) });
}

/** Request settings as shown and stored: header values and the proxy's credentials left out. */
export function redactSettings<T extends { headers?: Record<string, string>; proxy?: string }>(settings: T): T {
  return {
    ...settings,
    ...(settings.proxy ? { proxy: redactUrl(settings.proxy) } : {}),
    ...(settings.headers
      ? { headers: Object.fromEntries(Object.keys(settings.headers).map((k) => [k, REDACTED])) }
      : {}),
  };
}

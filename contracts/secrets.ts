// Secrets in plans: a header value may refer to an environment variable of the worker that runs
// the job (`${env:API_TOKEN}`, also inside text: `Bearer ${env:API_TOKEN}`). The reference is what
// travels in jobs and sits in Redis; the worker puts the value in when it sends the request.

/** Headers that carry credentials: a plan must give their values as references. */
export const SENSITIVE_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'x-auth-token',
  'x-access-token',
] as const;

/** `${env:NAME}`; NAME as a POSIX shell would take it. */
export const ENV_REFERENCE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function isSensitiveHeader(name: string): boolean {
  return (SENSITIVE_HEADERS as readonly string[]).includes(name.toLowerCase());
}

/** The environment variables a header value refers to. */
export function envReferencesIn(value: string): string[] {
  return [...value.matchAll(ENV_REFERENCE)].map((m) => m[1]);
}

/** What is wrong with a header value in a plan, or undefined. */
export function headerValueProblem(name: string, value: string): string | undefined {
  if (value.replace(ENV_REFERENCE, '').includes('${'))
    return `"${value}" holds a "\${" that is not a reference: write \${env:NAME}`;
  if (isSensitiveHeader(name) && envReferencesIn(value).length === 0) {
    return `${name} carries credentials: give its value as \${env:NAME} (e.g. "Bearer \${env:API_TOKEN}"), set on the workers, so the secret never travels in jobs or sits in Redis`;
  }
  return undefined;
}

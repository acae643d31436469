// Puts the worker's environment into a job's references (`${env:NAME}`, contracts/secrets.ts)
// just before the probe runs, so the values exist only in this process. A value is checked
// before anything is sent: a header value must be sendable as it is (no CR, LF or other control
// character, nothing beyond Latin-1), and a URL's values are percent-encoded, so no variable can
// add a header, start a second request or change where a request goes.
import type { JobTarget } from '../contracts/job.js';
import { ENV_REFERENCE, headerValueCharsProblem, replaceUrlReferences } from '../contracts/secrets.js';

/** A reference names a variable this worker does not have; classified as SECRET_NOT_SET. */
export class SecretNotSetError extends Error {
  override name = 'SecretNotSetError';
  readonly code = 'SECRET_NOT_SET';
}

/** A variable's value cannot be sent where the reference stands; classified as SECRET_INVALID. */
export class SecretInvalidError extends Error {
  override name = 'SecretInvalidError';
  readonly code = 'SECRET_INVALID';
}

/** A URL with a reference or a user:password part: the only URLs this changes. */
const HAS_REFERENCE_OR_USER = /\$\{env:|^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*@/;

/** As written where a literal user name is not valid percent-encoding (`%zz`). */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function variableValue(variable: string, where: string, env: NodeJS.ProcessEnv): string {
  const secret = env[variable];
  if (secret === undefined || secret === '')
    throw new SecretNotSetError(`${where} refers to \${env:${variable}}, which is not set on this worker`);
  return secret;
}

/**
 * The target with every reference in its header values and URL replaced. A URL's user:password
 * becomes the Authorization header (Basic), as curl and browsers send it, and leaves the URL, so
 * every probe sends it the one way it sends plan headers. Throws SecretNotSetError for a missing
 * variable and SecretInvalidError for a value that cannot be sent; neither message holds a value.
 */
export function withSecrets(target: JobTarget, env: NodeJS.ProcessEnv = process.env): JobTarget {
  if (!target.headers && !HAS_REFERENCE_OR_USER.test(target.url)) return target;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(target.headers ?? {})) {
    headers[name] = value.replace(ENV_REFERENCE, (_reference, variable: string) => {
      const secret = variableValue(variable, `header ${name}`, env);
      const problem = headerValueCharsProblem(secret);
      if (problem)
        throw new SecretInvalidError(`header ${name}: the value of \${env:${variable}} ${problem}; nothing was sent`);
      return secret;
    });
  }
  if (!HAS_REFERENCE_OR_USER.test(target.url)) return { ...target, headers };
  const url = new URL(
    replaceUrlReferences(target.url, (variable) => {
      const secret = variableValue(variable, 'the URL', env);
      try {
        return encodeURIComponent(secret);
      } catch {
        // A lone UTF-16 surrogate has no UTF-8 form to percent-encode.
        throw new SecretInvalidError(
          `the URL: the value of \${env:${variable}} is not valid Unicode; nothing was sent`,
        );
      }
    }),
  );
  if (url.username || url.password) {
    const user = percentDecoded(url.username);
    if (user.includes(':'))
      throw new SecretInvalidError('the URL: its user name holds a ":", which Basic authentication cannot carry');
    const credentials = `${user}:${percentDecoded(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return {
    ...target,
    url: url.href,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
  };
}

// Puts the worker's environment into a job's references (`${env:NAME}`, contracts/secrets.ts)
// just before the probe runs, so the values exist only in this process. A value is checked
// before anything is sent: a header value must be sendable as it is (no CR, LF or other control
// character, nothing beyond Latin-1), and a URL's values are percent-encoded, so no variable can
// add a header, start a second request or change where a request goes.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, constants } from 'node:fs';
import path from 'node:path';
import type { JobTarget, JobTls } from '../contracts/job.js';
import { ENV_REFERENCE, headerValueCharsProblem, replaceUrlReferences, wholeReference } from '../contracts/secrets.js';

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
export function withSecrets(
  target: JobTarget,
  env: NodeJS.ProcessEnv = process.env,
  fileDirs: SecretFileDirs = secretFileDirsOf(env),
): JobTarget {
  const withCert = target.tls?.key ? { ...target, tls: withClientCertificate(target.tls, env, fileDirs) } : target;
  const withProxy = withCert.proxy?.includes('${env:')
    ? { ...withCert, proxy: urlWithReferences(withCert.proxy, 'the proxy URL', env) }
    : withCert;
  return withHeaderAndUrlSecrets(withProxy, env);
}

/** A URL's references replaced by their values, percent-encoded where they stand. */
function urlWithReferences(url: string, where: string, env: NodeJS.ProcessEnv): string {
  return replaceUrlReferences(url, (variable) => {
    const secret = variableValue(variable, where, env);
    try {
      return encodeURIComponent(secret);
    } catch {
      // A lone UTF-16 surrogate has no UTF-8 form to percent-encode.
      throw new SecretInvalidError(`${where}: the value of \${env:${variable}} is not valid Unicode; nothing was sent`);
    }
  });
}

function withHeaderAndUrlSecrets(target: JobTarget, env: NodeJS.ProcessEnv): JobTarget {
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
  const url = new URL(urlWithReferences(target.url, 'the URL', env));
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

/** Where `${file:...}` references may read: any file (an embedded run: the user's own plan on
 * their machine), or only files under these directories (a worker's jobs come from Redis). */
export type SecretFileDirs = 'any' | readonly string[];

/** A worker reads secret files only under PROBEFLEET_SECRET_FILE_DIRS (":"-separated), by default
 * where containers mount secrets (/run/secrets) and /etc/probefleet. */
export function secretFileDirsOf(env: NodeJS.ProcessEnv): readonly string[] {
  const given = env.PROBEFLEET_SECRET_FILE_DIRS;
  return given ? given.split(':').filter(Boolean) : ['/run/secrets', '/etc/probefleet'];
}

/** Bytes in a secret file: a PEM key or certificate chain is a few KB. */
const SECRET_FILE_BYTES = 64 * 1024;

/** The value a whole reference stands for; the messages name the reference, never the value. */
function referencedValue(reference: string, where: string, env: NodeJS.ProcessEnv, fileDirs: SecretFileDirs): string {
  const ref = wholeReference(reference);
  if (!ref) return reference; // a certificate as PEM: not a reference
  if (ref.kind === 'env') return variableValue(ref.name, where, env);
  const file = path.resolve(ref.path);
  if (fileDirs !== 'any' && !fileDirs.some((dir) => file.startsWith(`${path.resolve(dir)}/`)))
    throw new SecretInvalidError(
      `${where} refers to \${file:${ref.path}}, outside the directories this worker reads secrets from (${fileDirs.join(', ')}; PROBEFLEET_SECRET_FILE_DIRS)`,
    );
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new SecretNotSetError(
      `${where} refers to \${file:${ref.path}}, which cannot be read here: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > SECRET_FILE_BYTES)
      throw new SecretInvalidError(
        `${where}: \${file:${ref.path}} is not a regular file of at most ${SECRET_FILE_BYTES} bytes`,
      );
    const buffer = Buffer.alloc(stats.size);
    const read = readSync(fd, buffer, 0, stats.size, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The target's client certificate, key and passphrase as PEM and text, checked to belong
 * together before anything connects (a wrong key would otherwise fail every handshake). */
function withClientCertificate(tls: JobTls, env: NodeJS.ProcessEnv, fileDirs: SecretFileDirs): JobTls {
  const cert = referencedValue(tls.cert ?? '', 'tls.cert', env, fileDirs);
  const key = referencedValue(tls.key!, 'tls.key', env, fileDirs);
  const passphrase =
    tls.passphrase === undefined ? undefined : referencedValue(tls.passphrase, 'tls.passphrase', env, fileDirs);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw new SecretInvalidError('tls.cert is not a PEM certificate; nothing was sent');
  }
  let privateKey;
  try {
    privateKey = createPrivateKey({ key, ...(passphrase === undefined ? {} : { passphrase }) });
  } catch {
    throw new SecretInvalidError(
      `tls.key is not a PEM private key${passphrase === undefined ? ' (or it is encrypted: give tls.passphrase)' : ', or tls.passphrase does not open it'}; nothing was sent`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new SecretInvalidError('tls.key is not the key of tls.cert; nothing was sent');
  return { ...tls, cert, key, ...(passphrase === undefined ? {} : { passphrase }) };
}

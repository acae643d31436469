// Puts the worker's environment into a job's header values (`${env:NAME}`, contracts/secrets.ts)
// just before the probe runs, so the values exist only in this process.
import type { JobTarget } from '../contracts/job.js';
import { ENV_REFERENCE } from '../contracts/secrets.js';

/** A header refers to a variable this worker does not have; classified as SECRET_NOT_SET. */
export class SecretNotSetError extends Error {
  override name = 'SecretNotSetError';
  readonly code = 'SECRET_NOT_SET';
}

/** The target with every reference in its header values replaced; throws SecretNotSetError for a missing variable. */
export function withSecrets(target: JobTarget, env: NodeJS.ProcessEnv = process.env): JobTarget {
  if (!target.headers) return target;
  const headers = Object.fromEntries(
    Object.entries(target.headers).map(([name, value]) => [
      name,
      value.replace(ENV_REFERENCE, (_reference, variable: string) => {
        const secret = env[variable];
        if (secret === undefined || secret === '')
          throw new SecretNotSetError(`header ${name} refers to \${env:${variable}}, which is not set on this worker`);
        return secret;
      }),
    ]),
  );
  return { ...target, headers };
}

// What emulated regions need from the machine, checked before anything is created, so that a
// laptop without root gets one clear sentence instead of an `ip` error halfway through.
import { existsSync } from 'node:fs';
import { hasCommand } from './system.js';

/** The machine cannot host emulated regions; the message says what is missing and what to do. */
export class RegionsUnavailableError extends Error {
  override name = 'RegionsUnavailableError';
}

export interface MachineFacts {
  uid: number | undefined;
  hasCommand(name: string): boolean;
  hasNetworkNamespaces: boolean;
  /** The kernel has IPv6 (not built without it, nor booted with ipv6.disable=1). */
  hasIpv6: boolean;
}

export function machineFacts(): MachineFacts {
  return {
    uid: process.getuid?.(),
    hasCommand,
    hasNetworkNamespaces: existsSync('/proc/self/ns/net'),
    hasIpv6: existsSync('/proc/sys/net/ipv6'),
  };
}

/** Throws RegionsUnavailableError unless regions can be built here (root, Linux namespaces with
 * IPv6, iproute2). */
export function checkRegionsSupported(facts: MachineFacts = machineFacts()): void {
  if (facts.uid === undefined || !facts.hasNetworkNamespaces) {
    throw new RegionsUnavailableError('emulated regions need Linux network namespaces, and this system has none');
  }
  if (facts.uid !== 0) {
    throw new RegionsUnavailableError(
      'emulated regions need root: they create network namespaces, veth links, tc qdiscs and iptables rules. ' +
        'Run as root (for example `sudo -E npx probefleet regions ...`, or `sudo npm test`).',
    );
  }
  if (!facts.hasIpv6) {
    throw new RegionsUnavailableError(
      'emulated regions reach their target over IPv4 and IPv6, and this kernel has no IPv6 (booted with ipv6.disable=1?)',
    );
  }
  const missing = [
    ['ip', 'iproute2'],
    ['tc', 'iproute2'],
  ].filter(([command]) => !facts.hasCommand(command));
  if (missing.length > 0) {
    throw new RegionsUnavailableError(
      `emulated regions need ${missing.map(([c]) => c).join(' and ')}: apt-get install ${[...new Set(missing.map(([, p]) => p))].join(' ')}`,
    );
  }
}

/** The NFQUEUE delay (for kernels without netem) also needs iptables-legacy, ip6tables-legacy and a C compiler. */
export function checkNfqueueSupported(facts: MachineFacts = machineFacts()): void {
  const missing = [
    ['iptables-legacy', 'iptables'],
    ['ip6tables-legacy', 'iptables'],
    ['gcc', 'gcc'],
  ].filter(([command]) => !facts.hasCommand(command));
  if (missing.length > 0) {
    throw new RegionsUnavailableError(
      `this kernel has no netem, and the NFQUEUE delay helper needs ${missing.map(([c]) => c).join(' and ')}: ` +
        `apt-get install ${[...new Set(missing.map(([, p]) => p))].join(' ')} libnetfilter-queue-dev (or run test/services/ensure.sh)`,
    );
  }
}

// Certificates for the lab target, generated at start: a lab CA and leaf certificates it
// signs (or that sign themselves), with whatever names and validity a test needs.
import { webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
// @peculiar/x509 resolves its ASN.1 types through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

export interface KeyAndCert {
  keyPem: string;
  certPem: string;
}

export interface LeafOptions {
  /** DNS names and IP addresses the certificate is valid for. */
  hosts: string[];
  notBefore?: Date;
  notAfter?: Date;
  /** Sign with its own key instead of the lab CA's (an untrusted certificate). */
  selfSigned?: boolean;
  /** What the certificate is for: a server (the default) or a client (mutual TLS). */
  usage?: 'server' | 'client';
  /** Subject attributes and their values (`{CN: ..., O: ...}`), as given, whatever bytes they hold. @defaultValue CN = the first host */
  subject?: Record<string, string>;
}

export interface LabCa extends KeyAndCert {
  issue(options: LeafOptions): Promise<KeyAndCert>;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END PRIVATE KEY-----\n`;
}

function newKeys(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
}

function subjectAltNames(hosts: string[]): x509.SubjectAlternativeNameExtension {
  return new x509.SubjectAlternativeNameExtension(
    hosts.map((host) => (isIP(host) ? { type: 'ip' as const, value: host } : { type: 'dns' as const, value: host })),
  );
}

export async function createLabCa(): Promise<LabCa> {
  const caKeys = await newKeys();
  const caName = 'CN=probefleet lab CA';
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: caName,
    keys: caKeys,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 30 * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });

  return {
    keyPem: await keyPem(caKeys.privateKey),
    certPem: caCert.toString('pem'),
    async issue({ hosts, notBefore, notAfter, selfSigned, subject: names, usage }: LeafOptions): Promise<KeyAndCert> {
      const keys = await newKeys();
      // The JSON form takes any value; the string form would parse "=", "," and "+" in it.
      const subject = names
        ? new x509.Name(Object.entries(names).map(([type, value]) => ({ [type]: [value] })))
        : `CN=${hosts[0]}`;
      const cert = await x509.X509CertificateGenerator.create({
        subject,
        issuer: selfSigned ? subject : caName,
        publicKey: keys.publicKey,
        signingKey: selfSigned ? keys.privateKey : caKeys.privateKey,
        notBefore: notBefore ?? new Date(Date.now() - DAY_MS),
        notAfter: notAfter ?? new Date(Date.now() + 30 * DAY_MS),
        signingAlgorithm: SIGNING_ALGORITHM,
        extensions: [
          subjectAltNames(hosts),
          new x509.BasicConstraintsExtension(false),
          new x509.ExtendedKeyUsageExtension([
            usage === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth,
          ]),
        ],
      });
      return { keyPem: await keyPem(keys.privateKey), certPem: cert.toString('pem') };
    },
  };
}

/**
 * Single entry point to @peculiar/x509 for the rest of this folder.
 *
 * Importing x509 through this module guarantees two things before any PKI
 * code runs: reflect-metadata is loaded first (x509 crashes at import time
 * without it), and x509 is told to use Node's WebCrypto. Both happen once,
 * when this module is first evaluated.
 */
// @peculiar/x509 registers its algorithms through tsyringe, which needs Reflect metadata
// loaded before it; importing it here keeps every user of this library safe.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";

x509.cryptoProvider.set(webcrypto as unknown as ReturnType<typeof x509.cryptoProvider.get>);

/** WebCrypto key type, spelled via node:crypto so it works without the DOM lib. */
export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const subtle = webcrypto.subtle;
export { x509 };

// The device side's one entry to @peculiar/x509: reflect-metadata first (x509 registers its
// algorithms through tsyringe and crashes at import time without it), and Node's WebCrypto as
// its provider. The service has its own (src/lib/pki/provider.ts): the agent imports nothing
// of the service.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";

x509.cryptoProvider.set(webcrypto as unknown as ReturnType<typeof x509.cryptoProvider.get>);

export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const subtle = webcrypto.subtle;
export { x509 };

/**
 * The one error type this library throws for bad input.
 *
 * Everything a user can get wrong (pasting garbage, an expired CA, a key
 * that belongs to another certificate, a tampered CSR ...) ends up here with a
 * `message` written for humans, so the API layer can map it to a 400 response
 * and show the message as-is. Anything else that escapes the library is a bug.
 */
export class PkiInputError extends Error {
  override readonly name = "PkiInputError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

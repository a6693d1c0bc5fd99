// The credentials of a session's two legs.
// * The user's leg: a one-use ticket (browsers cannot put headers on a WebSocket handshake),
//   random, stored only as its SHA-256, valid TICKET_TTL_SECONDS; consuming it is one
//   conditional UPDATE, so two processes never both accept it (as src/modules/realtime/tickets.ts).
// * The device's leg: the device's own token (Authorization) plus a one-use token bound to the
//   connection. That one is derived (HMAC of the installation's key and the connection id)
//   rather than stored, so that the offer can be handed to the device again (long-poll,
//   heartbeat) without keeping a secret in clear; marking the connection joined uses it up.
import crypto from "node:crypto";
import { randomToken, sha256Hex } from "../../lib/crypto.js";

export const TICKET_TTL_SECONDS = 30;
const TICKET_PREFIX = "rs_";
const DEVICE_TOKEN_PREFIX = "rd_";

export function newTicket(now = new Date()) {
  const ticket = randomToken(TICKET_PREFIX, 40);
  return { ticket, hash: sha256Hex(ticket), expiresAt: new Date(now.getTime() + TICKET_TTL_SECONDS * 1000) };
}

/** The hash to look a presented ticket up by; null when it cannot be one of ours. */
export function ticketHashOf(ticket: string): string | null {
  if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 100) return null;
  return sha256Hex(ticket);
}

function mac(key: Uint8Array, purpose: string, value: string): Buffer {
  return crypto.createHmac("sha256", key).update(`${purpose}\n${value}`).digest();
}

export function deviceTokenOf(key: Uint8Array, connectionId: string): string {
  return DEVICE_TOKEN_PREFIX + mac(key, "remote-device-leg", connectionId).toString("base64url");
}

export function isDeviceToken(key: Uint8Array, connectionId: string, presented: string): boolean {
  const expected = Buffer.from(deviceTokenOf(key, connectionId));
  const given = Buffer.from(presented);
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

/** The connection a device token names: the id travels beside it (`<connectionId>.<mac>`). */
export function deviceLegToken(key: Uint8Array, connectionId: string): string {
  return `${connectionId}.${deviceTokenOf(key, connectionId)}`;
}

export function parseDeviceLegToken(key: Uint8Array, presented: string): string | null {
  const dot = presented.indexOf(".");
  if (dot !== 36) return null;
  const connectionId = presented.slice(0, dot);
  return isDeviceToken(key, connectionId, presented.slice(dot + 1)) ? connectionId : null;
}

/**
 * The internal hop between processes (docs/remote-access.md, "Several processes"): the
 * forwarding process proves itself with an HMAC of the installation's key over what it asks
 * for, valid HOP_TTL_MS.
 */
const HOP_TTL_MS = 30_000;

export function hopSignature(key: Uint8Array, connectionId: string, side: string, at: number): string {
  return mac(key, "remote-relay-hop", `${connectionId}\n${side}\n${at}`).toString("base64url");
}

export function isHopSignature(key: Uint8Array, connectionId: string, side: string, at: number, presented: string, now = Date.now()): boolean {
  if (!Number.isFinite(at) || Math.abs(now - at) > HOP_TTL_MS) return false;
  const expected = Buffer.from(hopSignature(key, connectionId, side, at));
  const given = Buffer.from(presented);
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

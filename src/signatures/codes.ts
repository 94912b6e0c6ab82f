import { sha256Hex, toHex } from "../lib/crypto";

/**
 * Signers' one-time codes (docs/decisions/0011-server-verified-signers.md), kept in the envelope's Durable Object storage: one
 * live code per signer, stored as SHA-256 over a per-code random salt, valid 10 minutes, single use, ended by 5
 * wrong tries; a signer may have one mailed at most once a minute and 5 times an hour. The object runs one call at a
 * time (envelope-signer.ts), so the attempt count is exact however many guesses race.
 *
 * Across all of a signer's codes, 15 wrong tries lock the signer's code verification (`signer_locks`, kept
 * apart from the codes so a new code does not reset it). The lock does not end with time: only a new link the sender
 * sends (resend.ts) lifts it.
 */
export const CODE_TTL_SECONDS = 600;
export const MAX_CODE_ATTEMPTS = 5;
export const MAX_FAILED_CODE_TRIES = 15;
/** What a locked signer's Retry-After says: the lock has no end in time, so this is only when to look again. */
export const LOCKED_RETRY_AFTER_SECONDS = 86_400;
const RESEND_AFTER_MS = 60_000;
const SENDS_PER_HOUR = 5;

export type CodeRefusal = "code_invalid" | "code_expired" | "code_attempts_exceeded";

export const CODE_MESSAGES: Record<CodeRefusal | "code_resend_too_soon" | "code_hourly_limit" | "verification_locked", string> = {
  code_invalid: "The code is not right, or no code is pending (request one with send_code)",
  code_expired: "The code has expired: request a new one",
  code_attempts_exceeded: "Too many wrong tries: that code no longer works; request a new one",
  code_resend_too_soon: "A code was sent moments ago: wait before asking for another",
  code_hourly_limit: "Five codes were sent in the last hour: wait before asking for another (Retry-After says how long)",
  // Read by the signer on the hosted page: plain words; Retry-After (a day) is documented as only when to look again.
  verification_locked: `${MAX_FAILED_CODE_TRIES} wrong codes were tried, so codes are no longer accepted for you until the sender sends you a new link. This lock does not end by waiting: ask the sender for a new link`,
};

interface CodeRow {
  [key: string]: SqlStorageValue;
  hash: string;
  salt: string;
  expires_at: number;
  attempts: number;
  sends: string;
}

/** A uniform 6-digit code (rejection sampling, so no value is likelier than another). */
function newCode(): string {
  const limit = Math.floor(0x1_0000_0000 / 1_000_000) * 1_000_000;
  for (;;) {
    const [n] = crypto.getRandomValues(new Uint32Array(1));
    if (n! < limit) return String(n! % 1_000_000).padStart(6, "0");
  }
}

const hashOf = (signerId: string, salt: string, code: string) => sha256Hex(`${signerId}\n${salt}\n${code}`);

interface LockRow {
  [key: string]: SqlStorageValue;
  failures: number;
  locked_at: number | null;
  audited: number;
}

export class SignerCodes {
  /**
   * Tables are made when first needed (a code issued, a wrong try), not when the object starts: a token shaped like a
   * real one reaches the object its id names, and such a probe must not leave storage behind. An object made before
   * the lock existed has signer_codes without signer_locks, so each is looked up on its own.
   */
  private readonly made = new Map<string, boolean>();

  constructor(private readonly sql: SqlStorage) {}

  /** Whether a table exists, asked once per table, at the first use that needs it (never for an envelope that does not exist). */
  private has(table: "signer_codes" | "signer_locks"): boolean {
    let made = this.made.get(table);
    if (made === undefined) {
      made = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", table).one().n > 0;
      this.made.set(table, made);
    }
    return made;
  }

  private get ready(): boolean {
    return this.has("signer_codes");
  }

  private row(signerId: string): CodeRow | null {
    if (!this.ready) return null;
    return (
      this.sql
        .exec<CodeRow>("SELECT hash, salt, expires_at, attempts, sends FROM signer_codes WHERE signer_id = ?", signerId)
        .toArray()[0] ?? null
    );
  }

  private create(): void {
    if (this.ready) return;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS signer_codes (signer_id TEXT PRIMARY KEY, hash TEXT NOT NULL, salt TEXT NOT NULL, expires_at INTEGER NOT NULL, attempts INTEGER NOT NULL, sends TEXT NOT NULL)",
    );
    this.made.set("signer_codes", true);
  }

  private lock(signerId: string): LockRow | null {
    if (!this.has("signer_locks")) return null;
    return (
      this.sql.exec<LockRow>("SELECT failures, locked_at, audited FROM signer_locks WHERE signer_id = ?", signerId).toArray()[0] ?? null
    );
  }

  /** Counts a wrong try against the signer; the one that reaches the cap locks them and ends their code. */
  private countFailure(signerId: string, now: number): "code_invalid" | "locked" {
    if (!this.has("signer_locks")) {
      this.sql.exec(
        "CREATE TABLE IF NOT EXISTS signer_locks (signer_id TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_at INTEGER, audited INTEGER NOT NULL DEFAULT 0)",
      );
      this.made.set("signer_locks", true);
    }
    const { failures } = this.sql
      .exec<{ failures: number }>(
        "INSERT INTO signer_locks (signer_id, failures) VALUES (?, 1) ON CONFLICT (signer_id) DO UPDATE SET failures = failures + 1 RETURNING failures",
        signerId,
      )
      .one();
    if (failures < MAX_FAILED_CODE_TRIES) return "code_invalid";
    this.sql.exec("UPDATE signer_locks SET locked_at = ? WHERE signer_id = ? AND locked_at IS NULL", now, signerId);
    this.consume(signerId);
    return "locked";
  }

  /** Whether the signer's code verification is locked (until a resend). */
  isLocked(signerId: string): boolean {
    return this.lock(signerId)?.locked_at != null;
  }

  /** Whether the lock's audit entry still has to be written (it is written once, again after a failed write). */
  lockUnaudited(signerId: string): boolean {
    const lock = this.lock(signerId);
    return lock?.locked_at != null && lock.audited === 0;
  }

  markLockAudited(signerId: string): void {
    if (this.has("signer_locks")) this.sql.exec("UPDATE signer_locks SET audited = 1 WHERE signer_id = ?", signerId);
  }

  /** When this signer's codes of the last hour were mailed. */
  private sendsWithinHour(signerId: string, now: number): number[] {
    return (JSON.parse(this.row(signerId)?.sends ?? "[]") as number[]).filter((t) => t > now - 3_600_000);
  }

  /** Seconds until another code may be mailed to this signer (0: now). */
  waitBeforeSend(signerId: string, now = Date.now()): number {
    const sends = this.sendsWithinHour(signerId, now);
    const last = sends.at(-1);
    const waits = [last !== undefined ? last + RESEND_AFTER_MS - now : 0, sends.length >= SENDS_PER_HOUR ? sends[0]! + 3_600_000 - now : 0];
    return Math.max(0, Math.ceil(Math.max(...waits) / 1000));
  }

  /** A new code for the signer (the previous one dies); answers the raw code, for the mail only. */
  async issue(signerId: string, now = Date.now()): Promise<string> {
    const code = newCode();
    const salt = toHex(crypto.getRandomValues(new Uint8Array(16)));
    const sends = [...this.sendsWithinHour(signerId, now), now];
    this.create();
    this.sql.exec(
      "INSERT OR REPLACE INTO signer_codes (signer_id, hash, salt, expires_at, attempts, sends) VALUES (?, ?, ?, ?, 0, ?)",
      signerId,
      await hashOf(signerId, salt, code),
      salt,
      now + CODE_TTL_SECONDS * 1000,
      JSON.stringify(sends),
    );
    return code;
  }

  /**
   * Checks a typed code in constant time; a wrong one counts against the code and against the signer (`locked`: this
   * try reached the cap). A right one stays until `consume`.
   */
  async check(signerId: string, typed: string, now = Date.now()): Promise<"ok" | CodeRefusal | "locked"> {
    const row = this.row(signerId);
    if (!row || row.hash === "") return "code_invalid";
    if (row.attempts >= MAX_CODE_ATTEMPTS) return "code_attempts_exceeded";
    if (row.expires_at <= now) return "code_expired";
    const enc = new TextEncoder();
    const right = crypto.subtle.timingSafeEqual(enc.encode(await hashOf(signerId, row.salt, typed)), enc.encode(row.hash));
    if (right) return "ok";
    this.sql.exec("UPDATE signer_codes SET attempts = attempts + 1 WHERE signer_id = ?", signerId);
    return this.countFailure(signerId, now);
  }

  /** The code was used: it never works again (single use). */
  consume(signerId: string): void {
    if (this.ready) this.sql.exec("UPDATE signer_codes SET hash = '', attempts = 0 WHERE signer_id = ?", signerId);
  }

  /**
   * The signer is done (signed, declined, envelope ended): their code and lock go. Also when the sender sent them a
   * new link (resend.ts): the signer starts afresh, the lock, its count, the code pending and the send limits gone.
   */
  forget(signerIds: string[]): void {
    for (const id of signerIds) {
      if (this.ready) this.sql.exec("DELETE FROM signer_codes WHERE signer_id = ?", id);
      if (this.has("signer_locks")) this.sql.exec("DELETE FROM signer_locks WHERE signer_id = ?", id);
    }
  }
}

/** `l***@e*****.test`: enough for a signer to recognise the address, not enough to read it off the page. */
export function maskEmail(email: string): string {
  const [local = "", domain = ""] = email.split("@");
  const labels = domain.split(".");
  const mask = (s: string) => (s.length <= 1 ? s : `${s[0]}${"*".repeat(Math.min(s.length - 1, 8))}`);
  return `${mask(local)}@${labels.length > 1 ? [mask(labels[0]!), ...labels.slice(1)].join(".") : mask(domain)}`;
}

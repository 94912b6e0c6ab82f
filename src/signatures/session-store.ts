/**
 * Single-use signing sessions (issue 45): an embedded view URL (5 minutes) or an in-person host session (15 minutes),
 * kept in the envelope's Durable Object storage beside the signers' codes (codes.ts). Only the token's SHA-256 is kept.
 * The object runs one call at a time (envelope-signer.ts), so two opens of one URL at once find it unopened once.
 * Once opened, the session names the signing link it minted, so the signature made through that link records how it
 * was made (`via`) and who asked for it.
 */
export type SessionKind = "embedded" | "in_person";

export interface SessionPerson {
  userId: string;
  name: string | null;
  email: string | null;
}

export interface SessionData {
  /** Embedded: where the page goes when the signer is done, and the origins that may frame it (the first gets its messages). */
  returnUrl: string | null;
  frameAncestors: string[];
  /** Who asked for it: the sender who asked for the view, or the host. */
  requestedBy: SessionPerson;
}

export interface Session extends SessionData {
  tokenHash: string;
  signerId: string;
  kind: SessionKind;
  expiresAt: number;
  openedAt: number | null;
  linkHash: string | null;
}

interface Row {
  [key: string]: SqlStorageValue;
  token_hash: string;
  signer_id: string;
  kind: string;
  expires_at: number;
  opened_at: number | null;
  link_hash: string | null;
  data: string;
}

/** How long an opened session's row is kept: the signing it opened may take that long (its link lives on). */
const KEEP_OPENED_MS = 30 * 86_400_000;

const fromRow = (r: Row): Session => ({
  tokenHash: r.token_hash,
  signerId: r.signer_id,
  kind: r.kind as SessionKind,
  expiresAt: r.expires_at,
  openedAt: r.opened_at,
  linkHash: r.link_hash,
  ...(JSON.parse(r.data) as SessionData),
});

export class SigningSessions {
  /** Made at the first session (never for a probe of a token shaped like one). */
  private made: boolean | undefined;

  constructor(private readonly sql: SqlStorage) {}

  private get ready(): boolean {
    this.made ??=
      this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'signing_sessions'").one().n >
      0;
    return this.made;
  }

  add(s: Omit<Session, "openedAt" | "linkHash">, now = Date.now()): void {
    if (!this.ready) {
      this.sql.exec(
        "CREATE TABLE IF NOT EXISTS signing_sessions (token_hash TEXT PRIMARY KEY, signer_id TEXT NOT NULL, kind TEXT NOT NULL, expires_at INTEGER NOT NULL, opened_at INTEGER, link_hash TEXT, data TEXT NOT NULL)",
      );
      this.sql.exec("CREATE INDEX IF NOT EXISTS signing_sessions_link ON signing_sessions (link_hash)");
      this.made = true;
    }
    // Sessions never opened are dead once expired; opened ones stay while the signing they opened may go on.
    this.sql.exec("DELETE FROM signing_sessions WHERE (opened_at IS NULL AND expires_at < ?) OR opened_at < ?", now, now - KEEP_OPENED_MS);
    const data: SessionData = { returnUrl: s.returnUrl, frameAncestors: s.frameAncestors, requestedBy: s.requestedBy };
    this.sql.exec(
      "INSERT INTO signing_sessions (token_hash, signer_id, kind, expires_at, data) VALUES (?, ?, ?, ?, ?)",
      s.tokenHash,
      s.signerId,
      s.kind,
      s.expiresAt,
      JSON.stringify(data),
    );
  }

  get(tokenHash: string): Session | null {
    if (!this.ready) return null;
    const row = this.sql.exec<Row>("SELECT * FROM signing_sessions WHERE token_hash = ?", tokenHash).toArray()[0];
    return row ? fromRow(row) : null;
  }

  /** The session is used: it never opens again; `linkHash` is the signing link it minted. */
  markOpened(tokenHash: string, linkHash: string, now = Date.now()): void {
    this.sql.exec("UPDATE signing_sessions SET opened_at = ?, link_hash = ? WHERE token_hash = ?", now, linkHash, tokenHash);
  }

  /** The session that minted this signing link, if one did. */
  byLink(linkHash: string): Session | null {
    if (!this.ready) return null;
    const row = this.sql.exec<Row>("SELECT * FROM signing_sessions WHERE link_hash = ?", linkHash).toArray()[0];
    return row ? fromRow(row) : null;
  }
}

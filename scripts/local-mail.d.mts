import type { LocalDatabases } from "./local-d1.mjs";

export interface LocalMail {
  to: string;
  subject: string;
  text: string;
  createdAt: string;
  attachments?: { filename: string; contentType: string; content: string }[];
}
export declare function readLocalMail(env: LocalDatabases, query: { to: string; last: number }): Promise<LocalMail[]>;

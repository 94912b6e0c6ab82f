import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import {
  acceptancesOf,
  consent,
  detailOf,
  freshIp,
  newAgreement,
  publicAccept,
  publicGet,
  publish,
  sha256,
  storedAcceptances,
} from "../helpers/clickwrap";
import { allOnShards } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";

const GONE = { state: "gone" };
const HEX64 = /^[0-9a-f]{64}$/;

const versionRows = async (agreementId: string) =>
  (await allOnShards<{ n: number }>("SELECT COUNT(*) AS n FROM clickwrap_versions WHERE agreement_id = ?", agreementId)).reduce(
    (sum, r) => sum + r.n,
    0,
  );

describe("publishing agreements (spec: Clickwrap agreement state rules)", () => {
  it("answers 201 {id, versionHash}, the hex SHA-256 of the body exactly as sent", async () => {
    const owner = await createPrincipal();
    const body = "Terms v1\n\nYou agree to be kind. ünïcødé ✓  ";
    const res = await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "terms", title: "Terms", body } });
    expect(res.status).toBe(201);
    const out = await json(res);
    expect(Object.keys(out).sort()).toEqual(["id", "versionHash"]);
    expect(out.id).toEqual(expect.any(String));
    expect(out.versionHash).toMatch(HEX64);
    expect(out.versionHash).toBe(await sha256(body));
    // Not normalised: trailing whitespace is part of the text and so of the hash.
    expect(out.versionHash).not.toBe(await sha256(body.trim()));
  });

  it("the same body twice: same id and hash, and nothing new in the history", async () => {
    const owner = await createPrincipal();
    const first = await publish(owner, { key: "privacy", title: "Privacy", body: "We keep nothing." });
    const before = await detailOf(owner, first.id);
    const again = await publish(owner, { key: "privacy", title: "Privacy", body: "We keep nothing." });
    expect(again).toEqual(first);
    const after = await detailOf(owner, first.id);
    expect(after.history).toHaveLength(1);
    expect(after).toEqual(before); // not even updatedAt moved
    expect(await versionRows(first.id)).toBe(1);
  });

  it("a changed body: same id, new hash, both texts kept; history newest first with the current flag; the public GET serves the newest", async () => {
    const owner = await createPrincipal();
    const v1 = "Version one of the terms.";
    const v2 = "Version two of the terms, with a new clause.";
    const a = await publish(owner, { key: "tos", title: "Terms", body: v1 });
    const b = await publish(owner, { key: "tos", title: "Terms", body: v2 });
    expect(b.id).toBe(a.id);
    expect(b.versionHash).not.toBe(a.versionHash);
    expect(b.versionHash).toBe(await sha256(v2));

    const detail = await detailOf(owner, a.id);
    expect(detail.agreement).toMatchObject({
      id: a.id,
      key: "tos",
      title: "Terms",
      versionHash: b.versionHash,
      body: v2,
      active: true,
      versions: 2,
    });
    expect(detail.history.map((h: { versionHash: string; current: boolean }) => [h.versionHash, h.current])).toEqual([
      [b.versionHash, true],
      [a.versionHash, false],
    ]);

    for (const [hash, text] of [
      [a.versionHash, v1],
      [b.versionHash, v2],
    ] as const) {
      const res = await call("GET", `/api/clickwrap/${a.id}/versions/${hash}`, { token: owner.token });
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ versionHash: hash, title: "Terms", body: text });
    }
    const missing = await call("GET", `/api/clickwrap/${a.id}/versions/${await sha256("never published")}`, { token: owner.token });
    expect(missing.status).toBe(404);
    // Another agreement's version is not one of this agreement's, even in the same organization.
    const other = await publish(owner, { key: "other", title: "Other", body: "Other text" });
    expect((await call("GET", `/api/clickwrap/${a.id}/versions/${other.versionHash}`, { token: owner.token })).status).toBe(404);
    const listed = await json(await call("GET", "/api/clickwrap", { token: owner.token }));
    expect(listed.agreements.map((x: { id: string; versions: number; versionHash: string }) => [x.id, x.versions, x.versionHash])).toEqual([
      [other.id, 1, other.versionHash],
      [a.id, 2, b.versionHash],
    ]);

    const pub = await publicGet(a.id);
    expect(pub.status).toBe(200);
    expect(await json(pub)).toEqual({ agreement: { id: a.id, key: "tos", title: "Terms", body: v2, versionHash: b.versionHash } });
  });

  it("publishing the old body again makes it current again; the history keeps 2 entries", async () => {
    const owner = await createPrincipal();
    const a = await publish(owner, { key: "k", title: "T", body: "Text A" });
    const b = await publish(owner, { key: "k", title: "T", body: "Text B" });
    const a2 = await publish(owner, { key: "k", title: "T", body: "Text A" });
    expect(a2).toEqual(a);
    const detail = await detailOf(owner, a.id);
    expect(detail.agreement).toMatchObject({ versionHash: a.versionHash, body: "Text A", versions: 2 });
    expect(detail.history.map((h: { versionHash: string; current: boolean }) => [h.versionHash, h.current])).toEqual([
      [a.versionHash, true],
      [b.versionHash, false],
    ]);
    expect((await json(await publicGet(a.id))).agreement).toMatchObject({ body: "Text A", versionHash: a.versionHash });
  });

  it("the same body with another title changes nothing: a text keeps the title it was shown and accepted under", async () => {
    const owner = await createPrincipal();
    const a = await publish(owner, { key: "retitle", title: "Terms v1", body: "Text A" });
    expect((await publicAccept(a.id, { subjectRef: "s1", versionHash: a.versionHash })).status).toBe(200);
    const before = await detailOf(owner, a.id);
    const b = await publish(owner, { key: "retitle", title: "We may sell your data", body: "Text A" });
    expect(b).toEqual(a);
    expect(await detailOf(owner, a.id)).toEqual(before);
    // Another text, then the first one again under a new title: it comes back under the title it was accepted under.
    await publish(owner, { key: "retitle", title: "Terms v2", body: "Text B" });
    const again = await publish(owner, { key: "retitle", title: "We may sell your data", body: "Text A" });
    expect(again.versionHash).toBe(a.versionHash);
    const detail = await detailOf(owner, a.id);
    expect(detail.agreement.title).toBe("Terms v1");
    expect(detail.history.map((h: { title: string }) => h.title)).toEqual(["Terms v1", "Terms v2"]);
    expect((await json(await publicGet(a.id))).agreement.title).toBe("Terms v1");
    expect((await json(await call("GET", `/api/clickwrap/${a.id}/versions/${a.versionHash}`, { token: owner.token }))).title).toBe(
      "Terms v1",
    );
  });

  it("refuses invisible texts and subjects, and a consent page opened with a subject the accept route would refuse", async () => {
    const owner = await createPrincipal();
    expect(
      (await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "invisible", title: "T", body: "\u200b\u200b" } })).status,
    ).toBe(400);
    const a = await newAgreement(owner);
    expect((await publicAccept(a.id, { subjectRef: "user\u202Emoc.live" })).status).toBe(400);
    expect((await consent(a.id, `?subjectRef=${"x".repeat(300)}`)).status).toBe(400);
    // The page carries the subject as the server read it (trimmed), so the acceptance and the parent's message agree.
    const page = await (await consent(a.id, "?subjectRef=%20%20padded%20%20")).text();
    expect(page).toContain('data-subject="padded"');
  });

  it("public answers and acceptance lists are never stored by a shared cache", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    expect((await publicGet(a.id)).headers.get("cache-control")).toBe("no-store");
    expect((await call("GET", `/api/clickwrap/${a.id}/acceptances`, { token: owner.token })).headers.get("cache-control")).toBe(
      "private, no-store",
    );
  });

  it("publishing does not reactivate a deactivated agreement", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    expect((await call("POST", `/api/clickwrap/${a.id}/deactivate`, { token: owner.token })).status).toBe(200);
    const b = await publish(owner, { key: a.key, title: a.title, body: "A newer text" });
    expect(b.id).toBe(a.id);
    const res = await publicGet(a.id);
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual(GONE);
  });

  it("lists the organization's agreements, newest first", async () => {
    const owner = await createPrincipal();
    const first = await newAgreement(owner, { key: "first" });
    const second = await newAgreement(owner, { key: "second" });
    const res = await call("GET", "/api/clickwrap", { token: owner.token });
    expect(res.status).toBe(200);
    const list = await json(res);
    expect(list.agreements.map((a: { id: string }) => a.id)).toEqual([second.id, first.id]);
    expect(list.pagination.total).toBe(2);
  });

  describe("bad input → 400 invalid_request listing every problem", () => {
    const bad = async (body: unknown) => {
      const owner = await createPrincipal();
      const res = await call("POST", "/api/clickwrap", { token: owner.token, body });
      expect(res.status).toBe(400);
      const out = await json(res);
      expect(out.error).toBe("invalid_request");
      for (const issue of out.issues)
        expect(issue).toEqual({
          field: expect.any(String),
          path: expect.any(Array),
          code: expect.any(String),
          message: expect.any(String),
        });
      const count =
        (await (
          await tenantDb(owner.organizationId)
        )
          .prepare("SELECT COUNT(*) AS n FROM clickwrap_agreements WHERE organization_id = ?")
          .bind(owner.organizationId)
          .first<number>("n")) ?? 0;
      expect(count).toBe(0);
      return [...new Set(out.issues.map((i: { path: (string | number)[] }) => i.path.join(".")))].sort();
    };

    it("missing fields: every one named", async () => {
      expect(await bad({})).toEqual(["body", "key", "title"]);
    });

    it("an empty body, a whitespace-only body, a key with spaces, an empty title: all at once", async () => {
      expect(await bad({ key: "has spaces", title: "", body: "" })).toEqual(["body", "key", "title"]);
      expect(await bad({ key: "ok", title: "T", body: "   \n\t " })).toEqual(["body"]);
      expect(await bad({ key: "my terms", title: "T", body: "x" })).toEqual(["key"]);
    });

    it("a body over 200,000 characters (200,000 exactly is accepted)", async () => {
      expect(await bad({ key: "big", title: "T", body: "a".repeat(200_001) })).toEqual(["body"]);
      const owner = await createPrincipal();
      const ok = await publish(owner, { key: "big", title: "T", body: "a".repeat(200_000) });
      expect(ok.versionHash).toBe(await sha256("a".repeat(200_000)));
    });

    it("wrong types and unknown fields", async () => {
      expect(await bad({ key: 5, title: ["T"], body: { text: "x" } })).toEqual(["body", "key", "title"]);
      const paths = await bad({ key: "k", title: "T", body: "x", version: 2 });
      expect(paths.length).toBeGreaterThan(0);
    });
  });
});

describe("organization isolation (spec rule 5)", () => {
  it("the same key in two organizations is two agreements", async () => {
    const one = await createPrincipal();
    const two = await createPrincipal();
    const a = await publish(one, { key: "terms", title: "One's terms", body: "Same text" });
    const b = await publish(two, { key: "terms", title: "Two's terms", body: "Same text" });
    expect(b.id).not.toBe(a.id);
    expect(b.versionHash).toBe(a.versionHash);
    expect((await json(await publicGet(a.id))).agreement.title).toBe("One's terms");
    expect((await json(await publicGet(b.id))).agreement.title).toBe("Two's terms");
    // A republish in one organization leaves the other's alone.
    await publish(two, { key: "terms", title: "Two's terms", body: "Two's new text" });
    expect((await json(await publicGet(a.id))).agreement.body).toBe("Same text");
    const listTwo = await json(await call("GET", "/api/clickwrap", { token: two.token }));
    expect(listTwo.agreements.map((x: { id: string }) => x.id)).toEqual([b.id]);
  });

  it("another organization's agreement id answers every authenticated route exactly as an unknown id does", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const a = await newAgreement(owner);
    const unknown = crypto.randomUUID();
    const routes = (id: string) =>
      [
        ["GET", `/api/clickwrap/${id}`],
        ["GET", `/api/clickwrap/${id}/versions/${a.versionHash}`],
        ["GET", `/api/clickwrap/${id}/acceptances`],
        ["GET", `/api/clickwrap/${id}/acceptances?subjectRef=x&current=true`],
        ["POST", `/api/clickwrap/${id}/deactivate`],
        ["POST", `/api/clickwrap/${id}/activate`],
      ] as const;
    const foreign = routes(a.id);
    const missing = routes(unknown);
    for (let i = 0; i < foreign.length; i++) {
      const [method, path] = foreign[i]!;
      const theirs = await call(method, path, { token: stranger.token });
      const none = await call(method, missing[i]![1], { token: stranger.token });
      expect(theirs.status, `${method} ${path}`).toBe(404);
      expect(none.status).toBe(404);
      const body = await json(theirs);
      expect(body).toEqual(await json(none));
      expect(body).toMatchObject({ error: expect.any(String) });
      expect(JSON.stringify(body)).not.toContain(a.id);
    }
    // The stranger's deactivate changed nothing.
    expect((await publicGet(a.id)).status).toBe(200);
    expect((await detailOf(owner, a.id)).agreement.active).toBe(true);
  });

  it("acceptances of one organization are never listed for another", async () => {
    const one = await createPrincipal();
    const two = await createPrincipal();
    const a = await publish(one, { key: "shared-key", title: "T", body: "Same" });
    const b = await publish(two, { key: "shared-key", title: "T", body: "Same" });
    expect((await publicAccept(a.id, { subjectRef: "alice" })).status).toBe(200);
    expect((await publicAccept(a.id, { subjectRef: "bob" })).status).toBe(200);
    const ones = await acceptancesOf(one, a.id);
    expect(ones.acceptances).toHaveLength(2);
    const twos = await acceptancesOf(two, b.id);
    expect(twos.acceptances).toEqual([]);
    const alice = await acceptancesOf(two, b.id, "?subjectRef=alice");
    expect(alice).toMatchObject({ acceptances: [], acceptedCurrentVersion: false });
  });
});

describe("public routes", () => {
  it("an unknown agreement: 404 {state: gone} on GET and POST, and nothing recorded", async () => {
    const id = crypto.randomUUID();
    const get = await publicGet(id);
    expect(get.status).toBe(404);
    expect(await json(get)).toEqual(GONE);
    const post = await publicAccept(id, { subjectRef: "alice" });
    expect(post.status).toBe(404);
    expect(await json(post)).toEqual(GONE);
    expect(await storedAcceptances(id)).toBe(0);
  });

  it("deactivated: 404 {state: gone} on GET, POST and the consent page; reactivated: back", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { title: "Withdrawable", body: "Some terms" });
    const off = await call("POST", `/api/clickwrap/${a.id}/deactivate`, { token: owner.token });
    expect(off.status).toBe(200);
    expect(await json(off)).toMatchObject({ id: a.id, active: false });
    // Idempotent.
    expect((await json(await call("POST", `/api/clickwrap/${a.id}/deactivate`, { token: owner.token }))).active).toBe(false);

    const get = await publicGet(a.id);
    expect(get.status).toBe(404);
    expect(await json(get)).toEqual(GONE);
    const post = await publicAccept(a.id, { subjectRef: "late" });
    expect(post.status).toBe(404);
    expect(await json(post)).toEqual(GONE);
    expect(await storedAcceptances(a.id)).toBe(0);
    const page = await consent(a.id, "?subjectRef=late");
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).not.toContain("Some terms");
    expect(html).not.toContain("Withdrawable");
    expect(html).not.toContain('id="accept"');
    // The same page as for an id that never existed.
    const unknownPage = await consent(crypto.randomUUID());
    expect(unknownPage.status).toBe(404);
    const withoutNonce = (page: string) => page.replace(/nonce="[^"]*"/g, 'nonce=""');
    expect(withoutNonce(await unknownPage.text())).toBe(withoutNonce(html));
    // The operator still sees it, and its acceptances.
    expect((await detailOf(owner, a.id)).agreement).toMatchObject({ active: false, body: "Some terms" });
    expect((await acceptancesOf(owner, a.id)).acceptances).toEqual([]);

    const on = await call("POST", `/api/clickwrap/${a.id}/activate`, { token: owner.token });
    expect(on.status).toBe(200);
    expect(await json(on)).toMatchObject({ id: a.id, active: true });
    const back = await publicGet(a.id);
    expect(back.status).toBe(200);
    expect((await json(back)).agreement).toMatchObject({ id: a.id, body: "Some terms" });
    expect((await publicAccept(a.id, { subjectRef: "returning" })).status).toBe(200);
    expect((await consent(a.id)).status).toBe(200);
    expect(await storedAcceptances(a.id)).toBe(1);
  });

  it("POST with no body → accepted, subjectRef null; with subjectRef → recorded; with the current versionHash → recorded", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const bare = await call("POST", `/api/public/clickwrap/${a.id}`, { headers: { "cf-connecting-ip": freshIp() } });
    expect(bare.status).toBe(200);
    expect(await json(bare)).toEqual({ accepted: true });
    let list = await acceptancesOf(owner, a.id);
    expect(list.acceptances).toHaveLength(1);
    expect(list.acceptances[0]).toMatchObject({ subjectRef: null, versionHash: a.versionHash });

    const named = await publicAccept(a.id, { subjectRef: "person-42" });
    expect(await json(named)).toEqual({ accepted: true });
    const withHash = await publicAccept(a.id, { subjectRef: "person-43", versionHash: a.versionHash });
    expect(withHash.status).toBe(200);
    expect(await json(withHash)).toEqual({ accepted: true });

    list = await acceptancesOf(owner, a.id);
    expect(list.acceptances.map((x) => x.subjectRef).sort()).toEqual([null, "person-42", "person-43"].sort());
    for (const x of list.acceptances) {
      expect(x.versionHash).toBe(a.versionHash);
      expect(Number.isNaN(Date.parse(x.acceptedAt))).toBe(false);
    }
  });

  it("a stale versionHash (after a republish) → 409 version_mismatch, and nothing recorded", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { body: "Old text" });
    const b = await publish(owner, { key: a.key, title: a.title, body: "New text" });
    const before = await storedAcceptances(a.id);
    const stale = await publicAccept(a.id, { subjectRef: "alice", versionHash: a.versionHash });
    expect(stale.status).toBe(409);
    expect(await json(stale)).toEqual({ error: "version_mismatch", message: expect.any(String) });
    // A hash of a text never published is refused alike.
    const made = await publicAccept(a.id, { subjectRef: "alice", versionHash: await sha256("made up") });
    expect(made.status).toBe(409);
    expect(await storedAcceptances(a.id)).toBe(before);
    expect((await acceptancesOf(owner, a.id, "?subjectRef=alice")).acceptances).toEqual([]);
    // The current one goes through, against the new text.
    expect((await publicAccept(a.id, { subjectRef: "alice", versionHash: b.versionHash })).status).toBe(200);
    expect(await storedAcceptances(a.id)).toBe(before + 1);
    expect((await acceptancesOf(owner, a.id)).acceptances[0]!.versionHash).toBe(b.versionHash);
  });

  it("bad accept bodies → 400 invalid_request, nothing recorded", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const res = await publicAccept(a.id, { subjectRef: "", versionHash: "not-a-hash" });
    expect(res.status).toBe(400);
    const out = await json(res);
    expect(out.error).toBe("invalid_request");
    expect([...new Set(out.issues.map((i: { path: string[] }) => i.path.join(".")))].sort()).toEqual(["subjectRef", "versionHash"]);
    expect(await storedAcceptances(a.id)).toBe(0);
  });

  it("records the client address (cf-connecting-ip) and user agent with the acceptance", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const ip = freshIp();
    const res = await publicAccept(
      a.id,
      { subjectRef: "evidence" },
      { "cf-connecting-ip": ip, "user-agent": "Mozilla/5.0 (ClickwrapTest)" },
    );
    expect(res.status).toBe(200);
    const [row] = (await acceptancesOf(owner, a.id)).acceptances;
    expect(row).toMatchObject({ subjectRef: "evidence", ip, userAgent: "Mozilla/5.0 (ClickwrapTest)", versionHash: a.versionHash });
    expect(Date.now() - Date.parse(row!.acceptedAt)).toBeLessThan(60_000);
  });
});

describe("acceptances list", () => {
  it("newest first", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    for (const who of ["first", "second", "third"]) {
      expect((await publicAccept(a.id, { subjectRef: who })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 5));
    }
    const list = await acceptancesOf(owner, a.id);
    expect(list.acceptances.map((x) => x.subjectRef)).toEqual(["third", "second", "first"]);
    expect(list.versionHash).toBe(a.versionHash);
    expect(list).not.toHaveProperty("acceptedCurrentVersion");
  });

  it("is capped at the most recent 200", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const base = Date.parse("2025-01-01T00:00:00.000Z");
    const rows = Array.from({ length: 205 }, (_, i) => ({
      id: crypto.randomUUID(),
      subjectRef: `s-${i}`,
      at: new Date(base + i * 1000).toISOString(),
    }));
    // Shuffled in, so that insertion order cannot stand in for time order.
    const shuffled = [...rows].sort(() => Math.random() - 0.5);
    const shard = await tenantDb(owner.organizationId);
    await shard.batch(
      shuffled.map((r) =>
        shard
          .prepare(
            "INSERT INTO clickwrap_acceptances (id, organization_id, agreement_id, version_hash, subject_ref, accepted_at, ip, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          )
          .bind(r.id, owner.organizationId, a.id, a.versionHash, r.subjectRef, r.at, "192.0.2.1", "seed"),
      ),
    );
    const list = await acceptancesOf(owner, a.id);
    expect(list.acceptances).toHaveLength(200);
    expect(list.acceptances.map((x) => x.subjectRef)).toEqual(
      rows
        .slice(5)
        .reverse()
        .map((r) => r.subjectRef),
    );
    expect(list.acceptances[0]!.acceptedAt).toBe(rows[204]!.at);
    expect(list.acceptances[199]!.acceptedAt).toBe(rows[5]!.at);
  });

  it("filters by subjectRef and by current=true, and answers acceptedCurrentVersion (false after a republish until the subject accepts again)", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { body: "v1" });
    expect((await publicAccept(a.id, { subjectRef: "alice" })).status).toBe(200);
    expect((await publicAccept(a.id, { subjectRef: "bob" })).status).toBe(200);
    expect((await publicAccept(a.id)).status).toBe(200);

    const alice = await acceptancesOf(owner, a.id, "?subjectRef=alice");
    expect(alice.acceptances.map((x) => x.subjectRef)).toEqual(["alice"]);
    expect(alice.acceptedCurrentVersion).toBe(true);
    const carol = await acceptancesOf(owner, a.id, "?subjectRef=carol");
    expect(carol).toEqual({ acceptances: [], versionHash: a.versionHash, acceptedCurrentVersion: false });

    const b = await publish(owner, { key: a.key, title: a.title, body: "v2" });
    const aliceAfter = await acceptancesOf(owner, a.id, "?subjectRef=alice");
    expect(aliceAfter.acceptedCurrentVersion).toBe(false);
    expect(aliceAfter.versionHash).toBe(b.versionHash);
    expect(aliceAfter.acceptances.map((x) => x.versionHash)).toEqual([a.versionHash]);
    expect(await acceptancesOf(owner, a.id, "?subjectRef=alice&current=true")).toMatchObject({
      acceptances: [],
      acceptedCurrentVersion: false,
    });
    expect((await acceptancesOf(owner, a.id, "?current=true")).acceptances).toEqual([]);

    await new Promise((r) => setTimeout(r, 5));
    expect((await publicAccept(a.id, { subjectRef: "alice", versionHash: b.versionHash })).status).toBe(200);
    const aliceAgain = await acceptancesOf(owner, a.id, "?subjectRef=alice");
    expect(aliceAgain.acceptedCurrentVersion).toBe(true);
    expect(aliceAgain.acceptances.map((x) => x.versionHash)).toEqual([b.versionHash, a.versionHash]);
    const current = await acceptancesOf(owner, a.id, "?current=true");
    expect(current.acceptances.map((x) => [x.subjectRef, x.versionHash])).toEqual([["alice", b.versionHash]]);
    // Bob has not accepted v2.
    expect((await acceptancesOf(owner, a.id, "?subjectRef=bob")).acceptedCurrentVersion).toBe(false);
    // Everything is still listed without filters.
    expect((await acceptancesOf(owner, a.id)).acceptances).toHaveLength(4);
    // current=false means no narrowing.
    expect((await acceptancesOf(owner, a.id, "?current=false")).acceptances).toHaveLength(4);
  });

  it("rejects bad filters with 400 invalid_request", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const res = await call("GET", `/api/clickwrap/${a.id}/acceptances?current=yes&limit=5`, { token: owner.token });
    expect(res.status).toBe(400);
    const out = await json(res);
    expect(out.error).toBe("invalid_request");
    expect(out.issues.length).toBeGreaterThanOrEqual(2);
  });
});

describe("immutability of acceptances", () => {
  it("no route updates or deletes an acceptance", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    expect((await publicAccept(a.id, { subjectRef: "keep-me" })).status).toBe(200);
    const [row] = (await acceptancesOf(owner, a.id)).acceptances;
    const attempts: [string, string, string | undefined][] = [];
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      for (const path of [
        `/api/clickwrap/${a.id}/acceptances/${row!.id}`,
        `/api/clickwrap/${a.id}/acceptances`,
        `/api/clickwrap/acceptances/${row!.id}`,
        `/api/clickwrap/${a.id}`,
        `/api/public/clickwrap/${a.id}`,
      ]) {
        attempts.push([method, path, owner.token]);
        if (path.startsWith("/api/public/")) attempts.push([method, path, undefined]);
      }
    }
    for (const [method, path, token] of attempts) {
      const res = await call(method, path, {
        token,
        body: { subjectRef: "changed", versionHash: "0".repeat(64) },
        headers: { "cf-connecting-ip": freshIp() },
      });
      expect([404, 405], `${method} ${path}`).toContain(res.status);
    }
    const after = await acceptancesOf(owner, a.id);
    expect(after.acceptances).toEqual([row]);
    expect((await detailOf(owner, a.id)).agreement.active).toBe(true);
  });

  it("the database refuses a direct UPDATE or DELETE of an acceptance", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    expect((await publicAccept(a.id, { subjectRef: "original" })).status).toBe(200);
    const [row] = (await acceptancesOf(owner, a.id)).acceptances;
    const shard = await tenantDb(owner.organizationId);
    await expect(shard.prepare("UPDATE clickwrap_acceptances SET subject_ref = 'forged' WHERE id = ?").bind(row!.id).run()).rejects.toThrow(
      /immutable/,
    );
    await expect(
      shard.prepare("UPDATE clickwrap_acceptances SET version_hash = ? WHERE agreement_id = ?").bind("0".repeat(64), a.id).run(),
    ).rejects.toThrow(/immutable/);
    await expect(shard.prepare("DELETE FROM clickwrap_acceptances WHERE id = ?").bind(row!.id).run()).rejects.toThrow(/immutable/);
    await expect(shard.prepare("DELETE FROM clickwrap_acceptances WHERE agreement_id = ?").bind(a.id).run()).rejects.toThrow(/immutable/);
    expect((await acceptancesOf(owner, a.id)).acceptances).toEqual([row]);
  });
});

describe("rate limits (spec: Limits), per client address", () => {
  it("the 121st public GET within a minute from one address → 429 {error: rate_limited}; another address is unaffected", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const ip = freshIp();
    const answers = await Promise.all(Array.from({ length: 121 }, () => publicGet(a.id, ip)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(120);
    const limited = answers.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(await json(limited[0]!)).toEqual({ error: "rate_limited" });
    expect(limited[0]!.headers.get("retry-after")).toMatch(/^\d+$/);
    // Still limited, also on the consent page (same bucket), and for unknown ids.
    expect((await publicGet(a.id, ip)).status).toBe(429);
    expect((await consent(a.id, "", ip)).status).toBe(429);
    expect((await publicGet(crypto.randomUUID(), ip)).status).toBe(429);
    expect((await publicGet(a.id, freshIp())).status).toBe(200);
  });

  it("the 61st POST within a minute from one address → 429, and it is not recorded", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const ip = freshIp();
    const answers = await Promise.all(
      Array.from({ length: 61 }, (_, i) => publicAccept(a.id, { subjectRef: `s-${i}` }, { "cf-connecting-ip": ip })),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(60);
    const limited = answers.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(await json(limited[0]!)).toEqual({ error: "rate_limited" });
    expect(await storedAcceptances(a.id)).toBe(60);
    // GETs from that address have their own budget.
    expect((await publicGet(a.id, ip)).status).toBe(200);
    expect((await publicAccept(a.id, { subjectRef: "other" }, { "cf-connecting-ip": freshIp() })).status).toBe(200);
  });
});

describe("consent page (DESIGN.md contract 5, spec rule 6)", () => {
  it("serves the title and the HTML-escaped text, the current version, and frame headers that allow embedding", async () => {
    const owner = await createPrincipal();
    const body = `Clause 1 <script>alert(1)</script> & "quotes" 'single'\n<img src=x onerror=alert(2)>`;
    const a = await newAgreement(owner, { title: "Terms & <Conditions>", body: "first text" });
    const current = await publish(owner, { key: a.key, title: "Terms & <Conditions>", body });
    const res = await consent(a.id, "?subjectRef=x");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain("Terms &amp; &lt;Conditions&gt;");
    expect(html).not.toContain("<Conditions>");
    expect(html).toContain("Clause 1 &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;single&#39;");
    expect(html).toContain("&lt;img src=x onerror=alert(2)&gt;");
    expect(html).not.toContain("<script>alert(1)</script>");
    expect(html).not.toContain("<img src=x");
    expect(html).not.toContain("first text");
    expect(html).toContain(`data-version="${current.versionHash}"`);
    expect(html).toContain(`data-agreement="${a.id}"`);
    expect(html).toMatch(/<button[^>]*id="accept"/);

    expect(res.headers.get("x-frame-options")).toBeNull();
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp.split(";").map((d) => d.trim())).toContain("frame-ancestors *");
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    // Every script on the page carries this response's nonce.
    const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const attrs of scripts) expect(attrs).toContain(`nonce="${nonce}"`);
    // A fresh nonce per response.
    const again = await consent(a.id);
    expect(/script-src 'nonce-([^']+)'/.exec(again.headers.get("content-security-policy") ?? "")?.[1]).not.toBe(nonce);
  });

  it("follows a republish: the page shows the new text and version", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { body: "Page v1" });
    expect(await (await consent(a.id)).text()).toContain(`data-version="${a.versionHash}"`);
    const b = await publish(owner, { key: a.key, title: a.title, body: "Page v2" });
    const html = await (await consent(a.id)).text();
    expect(html).toContain(`data-version="${b.versionHash}"`);
    expect(html).toContain("Page v2");
    expect(html).not.toContain("Page v1");
  });
});

describe("concurrency", () => {
  it("10 concurrent first publishes of one key create one agreement; every answer names it", async () => {
    const owner = await createPrincipal();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        call("POST", "/api/clickwrap", { token: owner.token, body: { key: "raced-key", title: "Raced", body: "Raced text" } }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(201));
    const bodies = await Promise.all(answers.map((r) => json(r)));
    const ids = new Set(bodies.map((b) => b.id));
    expect(ids.size).toBe(1);
    expect(new Set(bodies.map((b) => b.versionHash))).toEqual(new Set([await sha256("Raced text")]));
    const [id] = [...ids];
    const n = await (await tenantDb(owner.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM clickwrap_agreements WHERE organization_id = ? AND key = 'raced-key'")
      .bind(owner.organizationId)
      .first<number>("n");
    expect(n).toBe(1);
    expect(await versionRows(id!)).toBe(1);
    expect((await detailOf(owner, id!)).history).toHaveLength(1);
  });

  it("5 concurrent republishes of one key with different bodies: one agreement, every text kept, the current one consistent", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { body: "base" });
    const texts = Array.from({ length: 5 }, (_, i) => `concurrent text ${i}`);
    const answers = await Promise.all(
      texts.map((body) => call("POST", "/api/clickwrap", { token: owner.token, body: { key: a.key, title: a.title, body } })),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(5).fill(201));
    const bodies = await Promise.all(answers.map((r) => json(r)));
    expect(new Set(bodies.map((b) => b.id))).toEqual(new Set([a.id]));
    expect(bodies.map((b) => b.versionHash)).toEqual(await Promise.all(texts.map(sha256)));
    const detail = await detailOf(owner, a.id);
    expect(detail.history).toHaveLength(6);
    expect(detail.history.filter((h: { current: boolean }) => h.current)).toHaveLength(1);
    expect(detail.history[0]).toMatchObject({ versionHash: detail.agreement.versionHash, current: true });
    expect(detail.agreement.versionHash).toBe(await sha256(detail.agreement.body));
    expect(texts).toContain(detail.agreement.body);
    expect((await json(await publicGet(a.id))).agreement).toMatchObject({
      body: detail.agreement.body,
      versionHash: detail.agreement.versionHash,
    });
  });

  it("20 concurrent accepts from distinct addresses are all recorded, exactly once each", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const subjects = Array.from({ length: 20 }, (_, i) => `concurrent-${i}`);
    const answers = await Promise.all(subjects.map((s) => publicAccept(a.id, { subjectRef: s, versionHash: a.versionHash })));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    const list = await acceptancesOf(owner, a.id);
    expect(list.acceptances.map((x) => x.subjectRef).sort()).toEqual([...subjects].sort());
    expect(new Set(list.acceptances.map((x) => x.id)).size).toBe(20);
    expect(new Set(list.acceptances.map((x) => x.ip)).size).toBe(20);
    expect(await storedAcceptances(a.id)).toBe(20);
  });
});

describe("the public routes from another site's own interface (CORS)", () => {
  it("answer any origin, preflights included, and accept from it", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    // A preflight is no operation of the API document: sent past the contract check.
    const preflight = await exports.default.fetch(
      new Request(`http://api.test/api/public/clickwrap/${a.id}`, {
        method: "OPTIONS",
        headers: {
          origin: "https://shop.example",
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
          "cf-connecting-ip": freshIp(),
        },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    const read = await call("GET", `/api/public/clickwrap/${a.id}`, {
      headers: { origin: "https://shop.example", "cf-connecting-ip": freshIp() },
    });
    expect(read.headers.get("access-control-allow-origin")).toBe("*");
    const accepted = await publicAccept(a.id, { subjectRef: "cors-subject" }, { origin: "https://shop.example" });
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get("access-control-allow-origin")).toBe("*");
    // The operators' routes stay closed to other origins.
    const own = await call("GET", `/api/clickwrap/${a.id}`, { token: owner.token, headers: { origin: "https://shop.example" } });
    expect(own.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("versions of an agreement: ETag and If-Match", () => {
  it("reads and writes carry the agreement's version; a publish or a move with a stale If-Match is a 412 and changes nothing", async () => {
    const owner = await createPrincipal();
    const first = await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "etag", title: "Terms", body: "Text one." } });
    expect(first.status).toBe(201);
    expect(first.headers.get("etag")).toBe('"1"');
    const { id } = await json(first);
    expect((await call("GET", `/api/clickwrap/${id}`, { token: owner.token })).headers.get("etag")).toBe('"1"');

    const publishWith = (body: string, ifMatch?: string) =>
      call("POST", "/api/clickwrap", {
        token: owner.token,
        body: { key: "etag", title: "Terms", body },
        headers: ifMatch ? { "if-match": ifMatch } : {},
      });
    const second = await publishWith("Text two.", '"1"');
    expect(second.status).toBe(201);
    expect(second.headers.get("etag")).toBe('"2"');
    const two = await json(second);

    // Someone published over version 1 meanwhile: a publish made from it is refused, the same body too.
    for (const body of ["Text three.", "Text two."]) {
      const stale = await publishWith(body, '"1"');
      expect(stale.status, body).toBe(412);
      expect(await json(stale)).toEqual({ error: "precondition_failed", message: expect.any(String) });
    }
    const detail = await call("GET", `/api/clickwrap/${id}`, { token: owner.token });
    expect(detail.headers.get("etag")).toBe('"2"');
    const shown = await json(detail);
    expect(shown.agreement).toMatchObject({ versionHash: two.versionHash, body: "Text two.", versions: 2 });
    expect(await versionRows(id)).toBe(2);

    // The same body under the current version changes nothing; without If-Match a publish is unconditional.
    const same = await publishWith("Text two.", '"2"');
    expect([same.status, same.headers.get("etag")]).toEqual([201, '"2"']);
    const unconditional = await publishWith("Text three.");
    expect([unconditional.status, unconditional.headers.get("etag")]).toEqual([201, '"3"']);

    expect((await call("POST", `/api/clickwrap/${id}/deactivate`, { token: owner.token, headers: { "if-match": '"2"' } })).status).toBe(
      412,
    );
    expect((await detailOf(owner, id)).agreement.active).toBe(true);
    const off = await call("POST", `/api/clickwrap/${id}/deactivate`, { token: owner.token, headers: { "if-match": '"3"' } });
    expect([off.status, off.headers.get("etag")]).toEqual([200, '"4"']);
    const on = await call("POST", `/api/clickwrap/${id}/activate`, { token: owner.token });
    expect([on.status, on.headers.get("etag")]).toEqual([200, '"5"']);
  });
});

describe("an agreement's history, a page at a time", () => {
  /** `n` earlier texts of agreement `a` written straight to D1, older than its current one, three to a millisecond. */
  async function earlierTexts(a: { id: string }, organizationId: string, n: number) {
    const base = Date.parse("2020-01-01T00:00:00.000Z");
    const rows = await Promise.all(
      Array.from({ length: n }, async (_, i) => ({
        hash: await sha256(`earlier text ${i}`),
        at: new Date(base + Math.floor(i / 3)).toISOString(),
      })),
    );
    const shard = await tenantDb(organizationId);
    await shard.batch(
      rows.map((r) =>
        shard
          .prepare(
            "INSERT INTO clickwrap_versions (agreement_id, version_hash, organization_id, title, body, published_at, current_since) VALUES (?, ?, ?, 'Earlier', 'earlier', ?, ?)",
          )
          .bind(a.id, r.hash, organizationId, r.at, r.at),
      ),
    );
  }

  async function walk(owner: { token: string }, id: string, limit: number) {
    const pages: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const res = await call("GET", `/api/clickwrap/${id}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
        token: owner.token,
      });
      expect(res.status).toBe(200);
      const page = await json(res);
      pages.push(page);
      cursor = page.nextCursor;
    } while (cursor && pages.length < 500);
    return pages;
  }

  it("answers 25 by default and at most 100, with nextCursor; walking the pages lists every text once, the current first, newest first", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner, { body: "The current text." });
    await earlierTexts(a, owner.organizationId, 130);

    const first = await detailOf(owner, a.id);
    expect(first.history).toHaveLength(25);
    expect(first.nextCursor).toEqual(expect.any(String));
    expect(first.agreement).toMatchObject({ versionHash: a.versionHash, body: "The current text.", versions: 131 });
    expect(first.history[0]).toMatchObject({ versionHash: a.versionHash, current: true });

    const big = await walk(owner, a.id, 100);
    expect(big.map((p) => p.history.length)).toEqual([100, 31]);
    expect(big.at(-1)!.nextCursor).toBeNull();

    for (const limit of [1, 7]) {
      const pages = await walk(owner, a.id, limit);
      const all = pages.flatMap((p) => p.history) as { versionHash: string; currentSince: string; current: boolean }[];
      expect(all, `limit ${limit}`).toHaveLength(131);
      expect(new Set(all.map((h) => h.versionHash)).size).toBe(131);
      expect(all.filter((h) => h.current).map((h) => h.versionHash)).toEqual([a.versionHash]);
      expect(all[0]!.current).toBe(true);
      const rest = all.slice(1);
      const sorted = [...rest].sort((x, y) =>
        x.currentSince === y.currentSince ? (x.versionHash < y.versionHash ? 1 : -1) : x.currentSince < y.currentSince ? 1 : -1,
      );
      expect(rest).toEqual(sorted);
      expect(pages.at(-1)!.nextCursor).toBeNull();
      // Every page carries the whole agreement and its version.
      for (const p of pages) expect(p.agreement.versionHash).toBe(a.versionHash);
    }
    // A single text: one page, no cursor.
    const lone = await newAgreement(owner);
    expect(await detailOf(owner, lone.id)).toMatchObject({ history: [{ versionHash: lone.versionHash, current: true }], nextCursor: null });
  });

  it("refuses an unknown parameter, a malformed limit and a forged cursor with the 400 of the other routes", async () => {
    const owner = await createPrincipal();
    const a = await newAgreement(owner);
    const list = await call("GET", "/api/clickwrap?colour=red", { token: owner.token });
    expect(list.status).toBe(400);
    const refusal = await json(list);
    expect(refusal).toEqual({
      error: "invalid_request",
      issues: [{ field: "colour", path: ["colour"], code: "unknown_field", message: "Unknown field 'colour'" }],
    });
    const unknown = await call("GET", `/api/clickwrap/${a.id}?colour=red`, { token: owner.token });
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toEqual(refusal);
    const forged = btoa(JSON.stringify(["current,currentSince:desc,versionHash:desc", [7, 1], "x"])).replace(/=+$/, "");
    for (const [query, param] of [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=0x10", "limit"],
      ["limit=05", "limit"],
      ["cursor=garbage", "cursor"],
      [`cursor=${forged}`, "cursor"],
    ] as const) {
      const res = await call("GET", `/api/clickwrap/${a.id}?${query}`, { token: owner.token });
      expect(res.status, query).toBe(400);
      expect(await json(res), query).toEqual({
        error: "invalid_request",
        issues: [{ field: param, path: [param], code: expect.any(String), message: expect.any(String) }],
      });
    }
  });
});

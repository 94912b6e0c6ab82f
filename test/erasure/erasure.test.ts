import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { resumeErasures } from "../../src/erasure/service";
import { sendDueSurveys } from "../../src/surveys/scheduling";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, logActivity } from "../helpers/contacts";
import { createDeal, getDeal } from "../helpers/deals";
import { createDocument, freshIp, leaseCanonical, mailTo, publicSign, sendForSignature, signAll, tokenOf } from "../helpers/documents";
import { answerOf, erase, filesFound, newPerson, seedMentions, seedSignatures, whereFound } from "../helpers/erasure";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { receiverUrl } from "../helpers/receiver";
import { personalTermsIndexed } from "../helpers/search";
import { aggregateOf, createTestimonial, publishedTestimonial } from "../helpers/testimonials";
import { publishedProfile } from "../helpers/profiles";
import { createProperty, getProperty } from "../helpers/properties";
import { createSurveyTemplate, publicSurvey, scheduleSurvey, STANDARD_QUESTIONS } from "../helpers/surveys";

describe("erasure on request (DELETE /v1/contacts/{id}?erase=true)", () => {
  it("takes the person's name and e-mail out of everything but the envelope they signed, keeping the numbers", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const person = {
      firstName: "Zephyrine",
      lastName: "Quillfeather",
      email: `zephyrine.${crypto.randomUUID().slice(0, 8)}@erase.test`,
      phone: "+1 416 555 0142",
    };
    const needles = [person.firstName, person.lastName, person.email, person.phone];
    // Webhook deliveries copy contact events, name and all.
    expect(
      (
        await call("POST", "/v1/webhooks", {
          token: p.token,
          body: { url: `${receiverUrl()}/hooks/sink`, events: ["contact.created", "contact.updated"] },
        })
      ).status,
    ).toBe(201);
    const contact = await createContact(p.token, { ...person, tags: ["client"], notes: `Met ${person.firstName} at the open house` });
    await logActivity(p.token, contact.id, { type: "PHONE_CALL", description: `Called ${person.firstName}` });
    const deal = await createDeal(p.token, { contactId: contact.id, title: "Condo purchase" });
    // Authored a testimonial (published, so the aggregates count it), referred a friend, got a survey by mail.
    const testimonial = await publishedTestimonial(p, {
      authorPersonId: contact.id,
      displayName: `${person.firstName} Q.`,
      permissionToPublishName: true,
      rating: 4,
    });
    const referral = await call("POST", "/api/reputation/referrals", {
      token: p.token,
      body: {
        agentUserId: p.userId,
        referrerPersonId: contact.id,
        referredName: "Friendly Neighbour",
        referredContact: `friend.${crypto.randomUUID().slice(0, 8)}@erase.test`,
      },
    });
    expect(referral.status).toBe(201);
    // Someone else referred them by phone; an agent's note names them.
    const byPhone = await call("POST", "/api/reputation/referrals", {
      token: p.token,
      body: {
        agentUserId: p.userId,
        referredName: `${person.firstName} ${person.lastName}`,
        referredContact: person.phone,
        notes: `Call ${person.firstName} ${person.lastName} after 5`,
      },
    });
    expect(byPhone.status).toBe(201);
    const template = await createSurveyTemplate(p, { questions: STANDARD_QUESTIONS });
    const survey = await scheduleSurvey(p, { templateId: template.id, recipientPersonId: contact.id, channel: "EMAIL" });
    await db
      .prepare("UPDATE surveys SET send_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), survey.id)
      .run();
    expect(await sendDueSurveys(env, createDb(db))).toBeGreaterThanOrEqual(1);
    // A second survey, by link, answered with a comment that signs off with their name.
    const answered = await scheduleSurvey(p, { templateId: template.id, recipientPersonId: contact.id, channel: "LINK" });
    expect((await publicSurvey("GET", answered.accessToken)).status).toBe(200);
    const reply = await publicSurvey("POST", answered.accessToken, {
      answers: {
        overall: 5,
        recommend: 9,
        comments: `Wonderful help. ${person.firstName} ${person.lastName}, ${person.phone}`,
        publish: false,
      },
    });
    expect(reply.status, await reply.clone().text()).toBe(200);
    // A name that is also a word of the payloads ("Lead", a stage) must not be taken out of other fields.
    const lead = await createContact(p.token, { firstName: "Lead", lastName: "Sale" });
    const leadDeal = await createDeal(p.token, { contactId: lead.id, type: "SALE" });
    // Signed an envelope as the tenant.
    const document = await createDocument(
      p.token,
      leaseCanonical({ tenants: [{ name: `${person.firstName} ${person.lastName}`, email: person.email }] }),
    );
    const sent = await sendForSignature(p.token, document.id);
    for (const link of sent.links) await signAll(tokenOf(link.url));
    // One delivery per contact event, once the fan-out has run.
    const contactEvents =
      "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type IN ('contact.created', 'contact.updated')";
    // Both counted on each look: an event of the signing may still be on its way when the first look is taken.
    await vi.waitFor(
      async () =>
        expect(
          await db
            .prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ?")
            .bind(p.organizationId)
            .first<{ n: number }>(),
        ).toEqual(await db.prepare(contactEvents).bind(p.organizationId).first<{ n: number }>()),
      { timeout: 5000 },
    );
    const aboutThem = await db.prepare(`${contactEvents} AND instr(data, ?) > 0`).bind(p.organizationId, contact.id).first<{ n: number }>();
    expect(await whereFound(needles)).not.toEqual([]);
    const aggregateBefore = await aggregateOf(p);

    const res = await erase(p, contact.id);
    expect(res.status).toBe(200);
    const answer = (await json(res)).data;
    expect(answer).toMatchObject({
      id: contact.id,
      deleted: true,
      retained: ["signed_envelopes"],
      retainedRecords: [{ kind: "signed_envelopes", count: 1, reason: expect.stringContaining("signed") }],
    });
    expect(answer.erased).toMatchObject({
      contacts: 1,
      activities: 1,
      testimonials: 1,
      mails: expect.any(Number),
      events: expect.any(Number),
      webhook_deliveries: aboutThem!.n,
    });

    // Nowhere but in the signed envelope.
    expect(await whereFound(needles, answer.retained)).toEqual([]);
    expect((await whereFound([person.email])).some((hit) => hit.startsWith("envelope_signers."))).toBe(true);

    expect(await db.prepare("SELECT ip, user_agent FROM survey_responses WHERE survey_id = ?").bind(answered.id).first()).toEqual({
      ip: null,
      user_agent: null,
    });

    // Erasing "Lead Sale" leaves the stages and types of the events it appears in alone.
    expect((await erase(p, lead.id)).status).toBe(200);
    const leadEvent = await db
      .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND type = 'deal.created' AND instr(data, ?) > 0")
      .bind(p.organizationId, leadDeal.id)
      .first<{ data: string }>();
    expect(JSON.parse(leadEvent!.data).object).toMatchObject({ id: leadDeal.id, type: "SALE", stage: "LEAD" });

    // The numbers stay; references point at a tombstone.
    expect(await aggregateOf(p)).toEqual(aggregateBefore);
    const shownTestimonial = await json(await call("GET", `/api/reputation/testimonials/${testimonial.id}`, { token: p.token }));
    expect(shownTestimonial).toMatchObject({ rating: 4, authorPersonId: contact.id, displayName: null });
    expect((await getDeal(p.token, deal.id, "?include=contact")).contact).toMatchObject({ id: contact.id, deleted: true });
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(404);
    await expectCrmError(await call("POST", `/v1/contacts/${contact.id}/restore`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(await erase(p, contact.id), 404, "not_found_error");
    // The record of the erasure: who and what kinds, no personal data (the search above covered its table too).
    const audit = await db
      .prepare("SELECT * FROM erasures WHERE organization_id = ? AND contact_id = ?")
      .bind(p.organizationId, contact.id)
      .all<Record<string, string>>();
    expect(audit.results).toHaveLength(1);
    expect(audit.results[0]).toMatchObject({
      contact_id: contact.id,
      actor_user_id: p.userId,
      retained: '["signed_envelopes"]',
      state: "done",
      subject: null,
    });
    expect(JSON.parse(audit.results[0]!.erased!)).toEqual(answer.erased);
  });

  it("finds the person, after the erasure and a restore of everything else in the trash, only in what `retained` names (issue 29)", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const person = newPerson();
    const mentions = await seedMentions(p, person);
    const signatures = await seedSignatures(p, person);
    // The searches see them first: in each table below, and in the PDF of every envelope.
    const before = await whereFound(person.needles);
    for (const table of [
      "trash_rows",
      "trash_entries",
      "contact_activities",
      "contact_communications",
      "contacts",
      "deals",
      "tasks",
      "properties",
      "envelopes",
      "envelope_signers",
      "envelope_audit",
      "documents",
      "clickwrap_acceptances",
    ]) {
      expect(
        before.some((hit) => hit.startsWith(`${table}.`)),
        table,
      ).toBe(true);
    }
    const filesBefore = await filesFound([person.fullName]);
    // (The document sent to them for a guarantee names others only.)
    for (const id of [...signatures.unsigned.slice(0, 4), mentions.open.envelopeId, signatures.signed.envelopeId])
      expect(
        filesBefore.some((hit) => hit.includes(`/${id}/document.pdf`)),
        id,
      ).toBe(true);
    expect(filesBefore.some((hit) => hit.startsWith("signed/")) && filesBefore.some((hit) => hit.startsWith("certificates/"))).toBe(true);
    expect(filesBefore.some((hit) => hit.startsWith(`properties/${p.organizationId}/${mentions.property.id}/reports/`))).toBe(true);
    // The search index (issue 33) holds their words: their contact's, and the neighbour's note and the deal's title.
    expect(before.some((hit) => hit.startsWith("search_terms."))).toBe(true);
    expect((await personalTermsIndexed(db, p.organizationId, person)).length).toBeGreaterThan(3);

    const res = await erase(p, mentions.contact.id);
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = await answerOf(res);
    // Nowhere but in what the answer says it kept: every table, every file, no word of theirs in the search index.
    expect(await whereFound(person.needles, answer.retained)).toEqual([]);
    expect(await filesFound(person.needles, answer.retained)).toEqual([]);
    expect(await personalTermsIndexed(db, p.organizationId, person)).toEqual([]);
    // Everything else in the trash comes back, and brings no name back.
    expect((await call("POST", `/v1/contacts/${mentions.trashedContact.id}/restore`, { token: p.token })).status).toBe(200);
    expect((await call("POST", `/v1/deals/${mentions.trashedDeal.id}/restore`, { token: p.token })).status).toBe(200);
    expect((await getDeal(p.token, mentions.trashedDeal.id)).title).toBe("Referral from [erased]");
    expect(await whereFound(person.needles, answer.retained)).toEqual([]);
    expect(await filesFound(person.needles, answer.retained)).toEqual([]);
    expect(await personalTermsIndexed(db, p.organizationId, person)).toEqual([]);
    expect(answer.retained).toEqual(["signed_envelopes", "clickwrap_acceptances"]);
    expect(answer.retainedRecords).toEqual([
      { kind: "signed_envelopes", count: 1, reason: expect.stringContaining("signed") },
      { kind: "clickwrap_acceptances", count: 1, reason: expect.stringContaining("immutable") },
    ]);
    // Six envelopes that never completed (the open one on the lease, declined, voided, expired, open, sent to them);
    // three documents naming them that no completed envelope holds (the lease, the unsigned lease, the draft).
    expect(answer.erased).toMatchObject({
      contacts: 1,
      activities: 1,
      communications: 1,
      communication_texts: 2,
      envelopes: 6,
      documents: 3,
      trash_labels: 1,
      property_texts: 1,
      trash_rows: expect.any(Number),
      deal_texts: expect.any(Number),
      activity_texts: expect.any(Number),
    });
    // The trashed contact's row, activity and voicemail, the trashed deal's row.
    expect(answer.erased.trash_rows).toBe(4);

    // What `retained` names is kept as it was: the signed envelope with its signers, its valid audit chain and its files.
    expect((await whereFound([person.email])).some((hit) => hit.startsWith("envelope_signers."))).toBe(true);
    expect((await whereFound([person.email])).some((hit) => hit.startsWith("clickwrap_acceptances."))).toBe(true);
    expect(
      (await filesFound([person.fullName])).filter((hit) => hit.startsWith("signed/") || hit.startsWith("certificates/")),
    ).toHaveLength(2);
    expect(
      (await json(await call("GET", `/api/signatures/${signatures.signed.envelopeId}/audit`, { token: p.token }))).chain,
    ).toMatchObject({ valid: true, seal: "valid" });
    expect((await call("GET", `/api/documents/${signatures.signedDoc.id}`, { token: p.token })).status).toBe(200);

    // What never completed is gone: its reads and its links answer 404, its search vectors went with it.
    for (const id of [...signatures.unsigned, mentions.open.envelopeId])
      expect((await call("GET", `/api/signatures/${id}`, { token: p.token })).status, id).toBe(404);
    for (const id of [signatures.unsignedDoc.id, signatures.draft.id, mentions.lease.id])
      expect((await call("GET", `/api/documents/${id}`, { token: p.token })).status, id).toBe(404);
    expect((await call("GET", `/api/documents/${signatures.othersDoc.id}`, { token: p.token })).status).toBe(200);
    for (const token of [...signatures.openTokens, mentions.openToken]) expect((await publicSign("GET", token)).status).toBe(404);
    const vectors = await db
      .prepare("SELECT document_id FROM document_vectors WHERE organization_id = ?")
      .bind(p.organizationId)
      .all<{ document_id: string }>();
    expect(vectors.results.map((r) => r.document_id)).toEqual([signatures.othersDoc.id]);
    expect(await db.prepare("SELECT state, subject FROM erasures WHERE contact_id = ?").bind(mentions.contact.id).first()).toEqual({
      state: "done",
      subject: null,
    });
  }, 120_000);

  it("a step that fails half-way leaves the erasure pending and the person unreadable; the retry of the request finishes it", async () => {
    const p = await createPrincipal();
    const person = newPerson();
    const { contact, open } = await seedMentions(p, person);
    let failures = 1;
    const files = new Proxy(env.FILES, {
      get(target, prop) {
        if (prop === "delete")
          return (keys: string | string[]) =>
            failures-- > 0 ? Promise.reject(new Error("injected: R2 delete failed")) : target.delete(keys);
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const first = await erase(p, contact.id, { FILES: files });
    expect(first.status).toBe(500);
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(404);
    expect(
      await (await tenantDb(p.organizationId)).prepare("SELECT state FROM erasures WHERE contact_id = ?").bind(contact.id).first(),
    ).toEqual({ state: "pending" });
    // The envelope's link already stopped working, before its files were to go.
    expect((await publicSign("GET", tokenOf(open.links.find((l) => l.email === person.email)!.url))).status).toBe(404);

    const retry = await erase(p, contact.id);
    expect(retry.status, await retry.clone().text()).toBe(200);
    const answer = await answerOf(retry);
    expect(answer.erased).toMatchObject({ contacts: 1, envelopes: 1, documents: 1, trash_labels: 1 });
    expect(await whereFound(person.needles, answer.retained)).toEqual([]);
    expect(await filesFound(person.needles, answer.retained)).toEqual([]);
    await expectCrmError(await erase(p, contact.id), 404, "not_found_error");
  }, 60_000);

  it("an erasure whose run stopped is finished by the cron once no run has touched it for a while, with the same counts", async () => {
    const answers: Record<string, number>[] = [];
    // 4: the first batch after `begin` (its two reads and its write): the envelope's; 8: a rewrite of the copies.
    for (const failAt of [0, 4, 8]) {
      const p = await createPrincipal();
      const person = newPerson();
      const { contact } = await seedMentions(p, person);
      const shard = (await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?")
        .bind(p.organizationId)
        .first<{ shard: number }>())!.shard;
      const binding = `DB_SHARD_${shard}` as const;
      const real = (env as unknown as Record<string, D1Database>)[binding]!;
      let batches = 0;
      const failing = (target: D1Database | D1DatabaseSession): object =>
        new Proxy(target, {
          get(t, prop) {
            if (prop === "batch")
              return (statements: D1PreparedStatement[]) =>
                ++batches === failAt ? Promise.reject(new Error("injected: D1 batch failed")) : t.batch(statements);
            if (prop === "withSession") return (...args: unknown[]) => failing((t as D1Database).withSession(...(args as [string])));
            const value = Reflect.get(t, prop);
            return typeof value === "function" ? value.bind(t) : value;
          },
        });
      const first = await erase(p, contact.id, { [binding]: failing(real) });
      const db = await tenantDb(p.organizationId);
      if (failAt === 0) {
        expect(first.status).toBe(200);
        answers.push((await answerOf(first)).erased);
        continue;
      }
      expect(first.status).toBe(500);
      expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(404);
      // Within its lease the cron leaves it to the run that may still be going.
      expect(await resumeErasures(env, createDb(db))).toBe(0);
      await db
        .prepare("UPDATE erasures SET touched_at = ? WHERE contact_id = ?")
        .bind(new Date(Date.now() - 10 * 60_000).toISOString(), contact.id)
        .run();
      expect(await resumeErasures(env, createDb(db))).toBe(1);
      const row = await db
        .prepare("SELECT state, subject, erased, retained FROM erasures WHERE contact_id = ?")
        .bind(contact.id)
        .first<{ state: string; subject: null; erased: string; retained: string }>();
      expect(row).toMatchObject({ state: "done", subject: null });
      answers.push(JSON.parse(row!.erased));
      expect(await whereFound(person.needles, JSON.parse(row!.retained))).toEqual([]);
      expect(await filesFound(person.needles, JSON.parse(row!.retained))).toEqual([]);
    }
    // Each change and its count commit in one batch: a failure anywhere changes none of the counts.
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  }, 120_000);

  it("keeps the audit trail append-only: only an ended, uncompleted envelope marked by an erasure loses it, a completed one never", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const completed = await sendForSignature(p.token, (await createDocument(p.token)).id);
    for (const link of completed.links) await signAll(tokenOf(link.url));
    const voided = await sendForSignature(p.token, (await createDocument(p.token)).id);
    expect((await call("DELETE", `/api/signatures/${voided.envelopeId}`, { token: p.token })).status).toBe(200);
    const open = await sendForSignature(p.token, (await createDocument(p.token)).id);
    const now = new Date().toISOString();
    const refused = (sql: string, ...binds: unknown[]) =>
      expect(
        db
          .prepare(sql)
          .bind(...binds)
          .run(),
      ).rejects.toThrow(/append-only|stays completed|is kept/);
    await refused("UPDATE envelope_audit SET ip = 'x' WHERE envelope_id = ?", completed.envelopeId);
    await refused("DELETE FROM envelope_audit WHERE envelope_id = ?", completed.envelopeId);
    await refused("UPDATE envelopes SET erasing_at = ? WHERE id = ?", now, completed.envelopeId);
    await refused("UPDATE envelopes SET status = 'voided' WHERE id = ?", completed.envelopeId);
    await refused("DELETE FROM envelope_audit WHERE envelope_id = ?", voided.envelopeId);
    // Marked, an open envelope's trail still stays: only an ended one's may go, and never by UPDATE.
    await db.prepare("UPDATE envelopes SET erasing_at = ? WHERE id IN (?, ?)").bind(now, voided.envelopeId, open.envelopeId).run();
    await refused("DELETE FROM envelope_audit WHERE envelope_id = ?", open.envelopeId);
    await refused("UPDATE envelope_audit SET ip = 'x' WHERE envelope_id = ?", voided.envelopeId);
    await db.prepare("DELETE FROM envelope_audit WHERE envelope_id = ?").bind(voided.envelopeId).run();
    const left = async (id: string) =>
      (await db.prepare("SELECT COUNT(*) AS n FROM envelope_audit WHERE envelope_id = ?").bind(id).first<{ n: number }>())!.n;
    expect([await left(voided.envelopeId), (await left(completed.envelopeId)) > 0, (await left(open.envelopeId)) > 0]).toEqual([
      0,
      true,
      true,
    ]);
  });

  it("takes the documents that name the person out of a Vectorize index too", async () => {
    const p = await createPrincipal();
    const person = newPerson();
    const contact = await createContact(p.token, { firstName: person.firstName, lastName: person.lastName, email: person.email });
    const draft = await createDocument(p.token, {
      schemaVersion: 1,
      formKey: "generic/free-form",
      title: "Notes",
      body: `About ${person.fullName}`,
      provenance: { aiDrafted: false },
    });
    const deleted: string[] = [];
    const index = { deleteByIds: async (ids: string[]) => (deleted.push(...ids), { mutationId: "m" }) };
    expect((await erase(p, contact.id, { ENVIRONMENT: "staging", DOCUMENT_VECTORS: index })).status).toBe(200);
    expect(deleted).toContain(`${draft.id}#0`);
    expect(deleted).toContain(`${draft.id}#63`);
  });

  it("deletes the organization's export zips: one made before the erasure holds the person, so none survives it (issue 33)", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Ottoline", lastName: "Zipworth" });
    const started = await call("POST", "/v1/organization/export", { token: p.token });
    expect(started.status).toBe(202);
    const id = (await json(started)).data.id;
    let job: Record<string, any> = {};
    await vi.waitFor(
      async () => {
        job = (await json(await call("GET", `/v1/organization/exports/${id}`, { token: p.token }))).data;
        expect(job.status).toBe("completed");
      },
      { timeout: 20_000, interval: 100 },
    );
    const zips = async () => (await env.FILES.list({ prefix: `exports/${p.organizationId}/` })).objects.length;
    expect(await zips()).toBe(1);
    const mailed = (await mailTo(`${p.userId}@example.test`)).find((m) => m.subject === "Your organization export is ready")!;
    const link = new URL(mailed.text.match(/https?:\/\/\S+\/api\/public\/exports\/\S+/)![0]).pathname;
    expect((await call("GET", link)).status).toBe(200);

    const res = await erase(p, contact.id);
    expect(res.status).toBe(200);
    expect((await answerOf(res)).erased).toMatchObject({ contacts: 1, exports: 1 });
    expect(await zips()).toBe(0);
    expect((await call("GET", link)).status).toBe(404);
    expect((await json(await call("GET", `/v1/organization/exports/${id}`, { token: p.token }))).data).toMatchObject({
      status: "deleted",
      expiresAt: null,
    });
  });

  it("honours If-Match: a stale version is a 412 and erases nothing", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Stale", lastName: "Version" });
    expect((await call("PUT", `/v1/contacts/${contact.id}`, { token: p.token, body: { notes: "moved on" } })).status).toBe(200);
    const stale = await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token, headers: { "if-match": '"1"' } });
    expect(stale.status).toBe(412);
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token, headers: { "if-match": '"2"' } })).status).toBe(
      200,
    );
  });

  it("refuses an unknown query parameter on the deletes and restores of every kind", async () => {
    const p = await createPrincipal();
    for (const path of ["/v1/contacts/x", "/v1/deals/x", "/v1/properties/x"]) {
      expect((await call("DELETE", `${path}?erase=true&colour=red`, { token: p.token })).status, path).toBe(422);
      expect((await call("POST", `${path}/restore?colour=red`, { token: p.token })).status, path).toBe(422);
    }
    expect((await call("DELETE", "/v1/properties/x?erase=true", { token: p.token })).status).toBe(422);
  });

  it("erases a contact waiting in the trash too, and answers other organizations as for an unknown id", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Trashie", lastName: "Eraseme" });
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: p.token })).status).toBe(200);
    await expectCrmError(await erase(other, contact.id), 404, "not_found_error");
    const res = await erase(p, contact.id);
    expect(res.status).toBe(200);
    expect(
      await (await tenantDb(p.organizationId)).prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?").bind(contact.id).first(),
    ).toEqual({ n: 0 });
    expect(await whereFound(["Eraseme", contact.email])).toEqual([]);
    expect((await json(await call("GET", "/v1/trash", { token: p.token }))).data).toEqual([]);
  });
});

describe("erasure: whose records, and every way the person is written (issue 29, verification pass)", () => {
  const tagOf = () => crypto.randomUUID().slice(0, 6);
  const fourDigits = () => String(Math.floor(Math.random() * 9000) + 1000);
  const feed = (slug: string) => call("GET", `/api/public/reviews/${slug}`, { headers: { "cf-connecting-ip": freshIp() } });

  it("keeps a namesake's envelope, documents and deal: records go whole only by the person's e-mail or phone, and a shared name is no one's to scrub", async () => {
    const p = await createPrincipal();
    const tag = tagOf();
    const name = { firstName: `John${tag}`, lastName: `Smith${tag}` };
    const fullName = `${name.firstName} ${name.lastName}`;
    const a = await createContact(p.token, {
      ...name,
      email: `john.one.${tag}@namesake.test`,
      phone: `+1 647 555 ${fourDigits()}`,
      notes: "the one asking for erasure",
    });
    const b = await createContact(p.token, { ...name, email: `jsmith.two.${tag}@other.test`, notes: "a different John Smith, a client" });
    // B's lease, out for signature; a second draft naming B; a memo naming the name alone; B's deal.
    const lease = await createDocument(p.token, leaseCanonical({ tenants: [{ name: fullName, email: b.email }] }));
    const sent = await sendForSignature(p.token, lease.id);
    const bLink = tokenOf(sent.links.find((l) => l.email === b.email)!.url);
    const draft = await createDocument(p.token, leaseCanonical({ tenants: [{ name: fullName, email: b.email }] }));
    const memo = await createDocument(p.token, {
      schemaVersion: 1,
      formKey: "generic/free-form",
      title: "Viewing",
      body: `${fullName} liked the view`,
      provenance: { aiDrafted: false },
    });
    const deal = await createDeal(p.token, { contactId: b.id, title: `${fullName} condo`, notes: `for ${fullName} (${b.email})` });
    // A's own e-mail and phone, which only A has, beside the shared name.
    const witness = await createContact(p.token, {
      firstName: "Wanda",
      lastName: "Witness",
      notes: `Ask ${a.email} or call ${a.phone}; ${fullName} is a friend`,
    });
    // A's own lease, by A's e-mail: it goes whole.
    const aLease = await createDocument(p.token, leaseCanonical({ tenants: [{ name: fullName, email: a.email }] }));

    const res = await erase(p, a.id);
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = await answerOf(res);
    expect(answer.erased).toMatchObject({ contacts: 1, documents: 1, contact_notes: 1 });
    expect(answer.erased.envelopes).toBeUndefined();
    // Said in the answer: what still names the name, and why.
    const byKind = Object.fromEntries(answer.retainedRecords.map((r: { kind: string }) => [r.kind, r]));
    expect(byKind.name_mentions).toMatchObject({
      count: expect.any(Number),
      reason: expect.stringContaining("another contact has the same name"),
    });
    expect(byKind.name_mentions.count).toBeGreaterThanOrEqual(3);
    // The lease and its envelope, the draft and the memo: they name the name, not A's e-mail or phone.
    expect(byKind.documents_by_name).toMatchObject({ count: 4, reason: expect.stringContaining("name alone") });
    expect(answer.retained).toEqual(expect.arrayContaining(["name_mentions", "documents_by_name"]));

    // B's envelope is open, B's link works, B's documents and deal are as they were.
    expect((await json(await call("GET", `/api/signatures/${sent.envelopeId}`, { token: p.token }))).status).not.toBe("voided");
    expect((await call("GET", `/api/signatures/${sent.envelopeId}`, { token: p.token })).status).toBe(200);
    expect((await publicSign("GET", bLink)).status).toBe(200);
    for (const id of [lease.id, draft.id, memo.id])
      expect((await call("GET", `/api/documents/${id}`, { token: p.token })).status, id).toBe(200);
    expect((await call("GET", `/api/documents/${aLease.id}`, { token: p.token })).status).toBe(404);
    expect(await getDeal(p.token, deal.id)).toMatchObject({ title: `${fullName} condo`, notes: `for ${fullName} (${b.email})` });
    expect(await getContact(p.token, b.id)).toMatchObject({ ...name, email: b.email, notes: "a different John Smith, a client" });
    // A's e-mail and phone are gone; the shared name stays.
    expect((await getContact(p.token, witness.id)).notes).toBe(`Ask [erased] or call [erased]; ${fullName} is a friend`);
    expect(await whereFound([a.email, a.phone])).toEqual([]);
  }, 60_000);

  it("finds names with quotes and backslashes in JSON columns too: no restore and no event brings them back", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const tag = tagOf();
    for (const [firstName, lastName] of [
      [`Robert "Bob"`, `Tables${tag}`],
      ["Ann\\Marie", `Back${tag}`],
    ] as const) {
      const fullName = `${firstName} ${lastName}`;
      const person = await createContact(p.token, { firstName, lastName, email: `${lastName.toLowerCase()}@erase-var.test` });
      const witness = await createContact(p.token, { firstName: "Wit", lastName: "Ness", notes: `Knows ${fullName}` });
      await logActivity(p.token, witness.id, { type: "NOTE", description: `Met ${fullName}`, metadata: { m: [fullName] } });
      const trashed = await createContact(p.token, {
        firstName: "Tra",
        lastName: "Shed",
        notes: `About ${fullName}`,
        preferences: { locations: [`near ${fullName}`] },
      });
      expect((await call("DELETE", `/v1/contacts/${trashed.id}`, { token: p.token })).status).toBe(200);
      const escaped = JSON.stringify(fullName).slice(1, -1);
      const twice = JSON.stringify(escaped).slice(1, -1);
      expect(await whereFound([escaped])).not.toEqual([]);

      expect((await erase(p, person.id)).status).toBe(200);
      expect(await whereFound([fullName, escaped, twice])).toEqual([]);
      const restored = await json(await call("POST", `/v1/contacts/${trashed.id}/restore`, { token: p.token }));
      expect(restored.data).toMatchObject({ notes: "About [erased]", preferences: { locations: ["near [erased]"] } });
      const activity = (await json(await call("GET", `/v1/contacts/${witness.id}/activities`, { token: p.token }))).data[0];
      expect(activity).toMatchObject({ description: "Met [erased]", metadata: { m: ["[erased]"] } });
      // The witness's events (what a webhook replay sends) carry no name either.
      const events = await db
        .prepare("SELECT data FROM outbox_events WHERE organization_id = ? AND instr(data, ?) > 0")
        .bind(p.organizationId, witness.id)
        .all<{ data: string }>();
      expect(events.results.length).toBeGreaterThan(0);
      for (const { data } of events.results) expect(JSON.stringify(JSON.parse(data))).not.toContain(lastName);
      expect(await whereFound([fullName, escaped, twice])).toEqual([]);
    }
  }, 60_000);

  it("takes the person out of imported testimonials, rejection reasons, agent profiles, tags and other contacts' preferences; the public feed shows them no more", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const person = newPerson();
    const contact = await createContact(p.token, {
      firstName: person.firstName,
      lastName: person.lastName,
      email: person.email,
      phone: person.phone,
    });
    // Imported from a review site: no author id, the display name is theirs.
    const imported = await publishedTestimonial(p, {
      source: "GOOGLE",
      displayName: person.fullName,
      permissionToPublishName: true,
      body: "Loved working with Erin",
    });
    const rejected = await createTestimonial(p, { body: "Meh." });
    expect(
      (
        await call("POST", `/api/reputation/testimonials/${rejected.id}/reject`, {
          token: p.token,
          body: { reason: `Posted twice by ${person.fullName}` },
        })
      ).status,
    ).toBe(200);
    const slug = await publishedProfile(p, {
      displayName: "Erin Agent",
      headline: `Agent of ${person.fullName}`,
      bio: `Helped ${person.fullName} buy`,
      featuredTestimonialIds: [imported.id],
    });
    expect((await feed(slug)).headers.get("x-cache")).toBe("MISS");
    const cached = await feed(slug);
    expect([cached.headers.get("x-cache"), (await cached.text()).includes(person.fullName)]).toEqual(["HIT", true]);
    // Tags naming them on two live contacts and a trashed one, beside a tag that stays; preferences naming them.
    const friendTag = `friend of ${person.fullName}`;
    const tagged = await createContact(p.token, {
      firstName: "Tia",
      lastName: "Tagged",
      tags: [friendTag, "vip"],
      preferences: { locations: [`near ${person.fullName}`, "Leslieville"] },
      address: { street: `c/o ${person.fullName}` },
    });
    await createContact(p.token, { firstName: "Tom", lastName: "Tagged", tags: [friendTag] });
    const trashed = await createContact(p.token, { firstName: "Tad", lastName: "Trashed", tags: [friendTag, "vip"] });
    expect((await call("DELETE", `/v1/contacts/${trashed.id}`, { token: p.token })).status).toBe(200);
    // A listing's disclosures and features (its sheet prints the features).
    const listing = await createProperty(p.token, {
      features: { interior: [`Mural by ${person.fullName}`] },
      disclosure: { other: [`Previous owner ${person.fullName}, ${person.phone}`] },
    });
    const tagsNow = async () =>
      (await json(await call("GET", "/v1/contacts/tags", { token: p.token }))).data.map((t: { name: string; count: number }) => [
        t.name,
        t.count,
      ]);
    expect(await tagsNow()).toEqual([
      [friendTag, 2],
      ["vip", 1],
    ]);

    const res = await erase(p, contact.id);
    expect(res.status, await res.clone().text()).toBe(200);

    // The public feed, read at once (its cached copy purged): no name.
    const after = await feed(slug);
    const shown = await after.text();
    expect(shown.includes(person.fullName), shown).toBe(false);
    expect(JSON.parse(shown).agent.headline).toBe("Agent of [erased]");
    expect((await json(await call("GET", `/api/reputation/testimonials/${imported.id}`, { token: p.token }))).displayName).toBeNull();
    expect((await json(await call("GET", `/api/reputation/testimonials/${rejected.id}`, { token: p.token }))).rejectionReason).toBe(
      "Posted twice by [erased]",
    );
    const profile = await json(await call("GET", "/api/reputation/profile", { token: p.token }));
    expect(JSON.stringify(profile)).not.toContain(person.lastName);
    // The tag is gone from every contact, counts exact; a restore does not bring it back.
    expect(await tagsNow()).toEqual([["vip", 1]]);
    expect(await getContact(p.token, tagged.id)).toMatchObject({
      tags: ["vip"],
      preferences: { locations: ["near [erased]", "Leslieville"] },
      address: { street: "c/o [erased]" },
    });
    expect((await call("POST", `/v1/contacts/${trashed.id}/restore`, { token: p.token })).status).toBe(200);
    expect(await getContact(p.token, trashed.id)).toMatchObject({ tags: ["vip"] });
    expect(await tagsNow()).toEqual([["vip", 2]]);
    expect(
      await db.prepare("SELECT COUNT(*) AS n FROM contact_tags WHERE organization_id = ? AND tag = 'vip'").bind(p.organizationId).first(),
    ).toEqual({ n: 2 });
    expect(await getProperty(p.token, listing.id)).toMatchObject({
      features: { interior: ["Mural by [erased]"] },
      disclosure: { other: ["Previous owner [erased], [erased]"] },
    });
    expect(await whereFound(person.needles)).toEqual([]);
  }, 60_000);

  it("finds mentions written differently — case beyond ASCII, another Unicode form, other spacing, another phone format — and nothing longer", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const tag = tagOf().replace(/\d/g, "x");
    const local = `555-0${fourDigits().slice(1)}`;
    const cases: {
      firstName: string;
      lastName: string;
      email?: string;
      phone?: string;
      mentions: (name: string, email: string) => string[];
      misses: (name: string, email: string) => string[];
    }[] = [
      {
        firstName: `Łukasz${tag}`,
        lastName: `Żółć${tag}`,
        mentions: (n: string) => [n.toLowerCase(), n.toUpperCase(), n],
        misses: (n: string) => [`${n}ski`],
      },
      {
        firstName: `Zoë${tag}`,
        lastName: `Ng${tag}`,
        mentions: (n: string) => [n.normalize("NFD"), n.normalize("NFC").toUpperCase()],
        misses: (n: string) => [n.split(" ")[0]!],
      },
      {
        firstName: `Lina${tag}`,
        lastName: `Break${tag}`,
        mentions: (n: string) => [n.replace(" ", "  "), n.replace(" ", "\n"), n.toUpperCase()],
        misses: (n: string) => [`${n}water`, `x${n}`],
      },
      {
        firstName: `Eve${tag}`,
        lastName: `Mailcase${tag}`,
        email: `Eve.Mailcase.${tag}@Erase-Var.test`,
        mentions: (_: string, email: string) => [email.toUpperCase(), email.toLowerCase(), email],
        misses: (_: string, email: string) => [`x.${email}`, `${email}.uk`, email.replace("@", "@x")],
      },
      {
        firstName: `Petra${tag}`,
        lastName: `Phone${tag}`,
        phone: `+1 (416) ${local}`,
        mentions: () => {
          const [x, y] = local.split("-");
          return [`416-${x}-${y}`, `416${x}${y}`, `+1416${x}${y}`, `(416) ${x}-${y}`, `416.${x}.${y}`, `416 ${x} ${y}`, `1-416-${x}-${y}`];
        },
        misses: () => {
          const [x, y] = local.split("-");
          return [`9416${x}${y}`, `416${x}${y}7`, `416-${x}-${y}-3`, `+44 416 ${x} ${y}`];
        },
      },
    ];
    for (const c of cases) {
      const fullName = `${c.firstName} ${c.lastName}`;
      const email = c.email ?? `${tag}.${c.lastName.length}.${crypto.randomUUID().slice(0, 4)}@erase-var.test`;
      const person = await createContact(p.token, {
        firstName: c.firstName,
        lastName: c.lastName,
        email,
        ...(c.phone ? { phone: c.phone } : {}),
      });
      const mentions = c.mentions(fullName, email);
      const misses = c.misses(fullName, email);
      const text = [...mentions, ...misses].join(" | ");
      const expected = [...mentions.map(() => "[erased]"), ...misses].join(" | ");
      const witness = await createContact(p.token, { firstName: "Wit", lastName: "Ness", notes: text });
      // Each way of writing it alone in a row of its own (a text column and a JSON one), and in the trash.
      const trashed: string[] = [];
      for (const mention of mentions) {
        await logActivity(p.token, witness.id, { type: "NOTE", description: `Met ${mention}`, metadata: { m: mention } });
        const t = await createContact(p.token, { firstName: "Tra", lastName: "Shed", notes: `About ${mention}` });
        expect((await call("DELETE", `/v1/contacts/${t.id}`, { token: p.token })).status).toBe(200);
        trashed.push(t.id);
      }
      await logActivity(p.token, witness.id, { type: "NOTE", description: misses.join(" | "), metadata: { m: misses } });
      const deal = await createDeal(p.token, { contactId: witness.id, title: `Deal ${mentions[0]!.replace(/\s+/g, " ")}` });
      const referral = c.phone
        ? await json(
            await call("POST", "/api/reputation/referrals", {
              token: p.token,
              body: { agentUserId: p.userId, referredName: "Someone", referredContact: mentions[4]! },
            }),
          )
        : null;

      const res = await erase(p, person.id);
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await getContact(p.token, witness.id)).notes, fullName).toBe(expected);
      const activities = (await json(await call("GET", `/v1/contacts/${witness.id}/activities?limit=100`, { token: p.token }))).data.map(
        (a: { description: string; metadata: { m: unknown } }) => [a.description, a.metadata.m],
      );
      expect(activities.sort(), fullName).toEqual(
        [...mentions.map(() => ["Met [erased]", "[erased]"]), [misses.join(" | "), misses]].sort(),
      );
      expect((await getDeal(p.token, deal.id)).title, fullName).toBe("Deal [erased]");
      for (const id of trashed)
        expect((await json(await call("POST", `/v1/contacts/${id}/restore`, { token: p.token }))).data.notes, fullName).toBe(
          "About [erased]",
        );
      if (referral)
        expect(await db.prepare("SELECT referred_name, referred_contact FROM referrals WHERE id = ?").bind(referral.id).first()).toEqual({
          referred_name: "[erased]",
          referred_contact: null,
        });
    }
  }, 90_000);
});

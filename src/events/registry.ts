import { auditConsumer } from "./audit";
import { certificateConsumer } from "../signatures/certificate";
import { sealingConsumer } from "../signatures/sealing";
import { documentIndexingConsumer } from "../documents/indexing";
import { obligationSyncConsumer } from "../documents/obligations";
import { referralLeadConsumer } from "../reputation/referrals";
import { surveyResponseConsumer } from "../reputation/survey-responses";
import { dealWonSurveyConsumer } from "../reputation/surveys";
import { webhookFanout } from "../webhooks/fanout";
import type { EventConsumer } from "./consumers";

/** Every consumer of the `events` queue. Later domains add theirs here (webhook fan-out, survey scheduling …). */
export const EVENT_CONSUMERS: EventConsumer[] = [auditConsumer, webhookFanout, certificateConsumer, sealingConsumer, obligationSyncConsumer, documentIndexingConsumer, referralLeadConsumer, dealWonSurveyConsumer, surveyResponseConsumer];

import { auditConsumer } from "./audit";
import { certificateConsumer } from "../signatures/certificate";
import { sealingConsumer } from "../signatures/sealing";
import { documentIndexingConsumer } from "../documents/indexing";
import { obligationSyncConsumer } from "../documents/obligations";
import { referralLeadConsumer } from "../referrals/service";
import { surveyResponseConsumer } from "../surveys/responses";
import { dealWonSurveyConsumer } from "../surveys/scheduling";
import { webhookFanout } from "../webhooks/fanout";
import type { EventConsumer } from "./consumers";

/** Every consumer of the `events` queue. Later domains add theirs here (webhook fan-out, survey scheduling …). */
export const EVENT_CONSUMERS: EventConsumer[] = [auditConsumer, webhookFanout, certificateConsumer, sealingConsumer, obligationSyncConsumer, documentIndexingConsumer, referralLeadConsumer, dealWonSurveyConsumer, surveyResponseConsumer];

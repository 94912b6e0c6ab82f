import { appointmentsErasable } from "../appointments/service";
import { actionPlansErasable } from "../action-plans/service";
import { clickwrapErasable } from "../clickwrap/service";
import { communicationsErasable } from "../communications/service";
import { contactsErasable } from "../contacts/service";
import type { Erasable } from "../crm/erasure";
import { dealsErasable } from "../deals/service";
import { documentsErasable } from "../documents/service";
import { exportsErasable } from "../exports/service";
import { importsErasable } from "../imports/service";
import { leadsErasable } from "../leads/service";
import { mergeErasable } from "../merge/service";
import { profilesErasable } from "../profiles/service";
import { propertiesErasable } from "../properties/service";
import { referralsErasable } from "../referrals/service";
import { signaturesErasable } from "../signatures/service";
import { smartListsErasable } from "../smart-lists/service";
import { surveysErasable } from "../surveys/service";
import { tasksErasable } from "../tasks/service";
import { templatesErasable } from "../templates/service";
import { testimonialsErasable } from "../testimonials/service";
import { trashErasable } from "../trash/service";
import { webhooksErasable } from "../webhooks/service";
import { platformErasable } from "./platform";

/**
 * Every domain that holds a person's data, each erasing its own tables (crm/erasure.ts), in the order the erasure
 * calls them, in `begin` and in the later steps alike. The order holds what depends on it:
 * - imports first: a running import refuses the erasure before anything is done;
 * - in `begin`'s batch the leads' reviews go before the merged keys (merge) that find some of them;
 * - in the later steps the envelopes (signatures) and documents go before the copies: voiding an envelope writes an
 *   event naming the person, which the events' rewrite (platform) then finds;
 * - the erased kinds of `begin` are counted, and answered, in this order.
 */
export const ERASABLES: readonly Erasable[] = [
  importsErasable,
  signaturesErasable,
  documentsErasable,
  contactsErasable,
  communicationsErasable,
  testimonialsErasable,
  referralsErasable,
  surveysErasable,
  platformErasable,
  leadsErasable,
  mergeErasable,
  trashErasable,
  webhooksErasable,
  dealsErasable,
  tasksErasable,
  propertiesErasable,
  profilesErasable,
  exportsErasable,
  clickwrapErasable,
  templatesErasable,
  smartListsErasable,
  appointmentsErasable,
  actionPlansErasable,
];

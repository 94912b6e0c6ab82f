import { z } from "zod";
import { Enrollment } from "../action-plans/schemas";
import { enrollContact } from "../action-plans/service";
import { defineTool } from "./tool";

const id = (what: string) => z.string().min(1).max(100).describe(`The ${what}'s id`);

export const enrollInActionPlan = defineTool({
  name: "enroll_in_action_plan",
  route: "POST /v1/action-plans/{id}/enrollments",
  title: "Enroll a contact in an action plan",
  description:
    "Starts a contact on an action plan (its timed e-mails, tasks, tags and status changes): the first step is due its delay from now, each next one its delay after the one before; the plan's e-mails go to the contact. The enrollment pauses by itself when the contact answers (an inbound e-mail, SMS or call logged on them). A contact is in a plan at most once at a time: already_enrolled while active or paused there. Emits action_plan.enrolled.",
  permission: "action-plans:manage",
  effect: "write",
  // Its e-mail steps mail the contact.
  openWorld: true,
  input: z.strictObject({ planId: id("action plan"), contactId: id("contact") }),
  output: z.object({ enrollment: Enrollment }),
  async run({ planId, contactId }, { ctx }) {
    return { enrollment: (await enrollContact(ctx, planId, contactId))! };
  },
});

export const planTools = [enrollInActionPlan];

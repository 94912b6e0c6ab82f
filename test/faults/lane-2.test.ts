// The fault table (test/helpers/fault-table.ts), lane 2 of 4: see test/helpers/fault-runner.ts.
import { faultLane } from "../helpers/fault-runner";

faultLane(2, 4);

import { approvalInboxFiles } from './approval-inbox-report.ts';
import { escalationLiveFiles } from './escalation-live-report.ts';
import { refundAgentFiles } from './refund-agent-report.ts';
import { repairLoopFiles } from './repair-loop-report.ts';
import type { ResultFile } from './results-file.ts';

/** Every file in results/, produced from fresh runs of the experiments. */
export async function allResultFiles(): Promise<ResultFile[]> {
  return [
    ...(await refundAgentFiles()),
    ...(await approvalInboxFiles()),
    ...(await repairLoopFiles()),
    ...(await escalationLiveFiles()),
  ];
}

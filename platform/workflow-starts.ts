import type * as workflows from '../workflows';
import { operationStart, type OperationTarget } from '../domain/search-attributes';

/**
 * The workflow types the worker runs, by name, typed from the workflow functions (a type
 * import only: no workflow code is loaded by the API or activities).
 */
export type Workflows = typeof workflows;
export type WorkflowName = keyof Workflows;
/** The arguments of workflow `N`, as its function declares them. */
export type WorkflowArgs<N extends WorkflowName> = Parameters<Workflows[N]>;

/**
 * A start of workflow `workflowType` for one operation, with its arguments checked against
 * the workflow function and the id and search attributes of `operationStart`. Spread it
 * into a client start, e.g.
 * `const s = typedStart('addonRestore', [input], target); client.workflow.start(s.workflowType, { ...s.options, taskQueue })`.
 */
export function typedStart<N extends WorkflowName>(workflowType: N, args: WorkflowArgs<N>, target: OperationTarget) {
  return { workflowType, options: { ...operationStart(target), args } };
}

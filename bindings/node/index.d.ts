/** Anything with a synchronous loadExtension(file): a better-sqlite3
 *  Database, or a node:sqlite DatabaseSync opened with allowExtension. */
export interface ExtensionLoader {
  loadExtension(file: string, ...rest: unknown[]): unknown;
}

/** The absolute path of dprl.so inside this package (Linux x64). */
export function getLoadablePath(): string;

/** Loads dprl into db; throws with a hint when the connection does not
 *  allow extensions. */
export function load(db: ExtensionLoader): void;

declare const dprl: { load: typeof load; getLoadablePath: typeof getLoadablePath };
export default dprl;

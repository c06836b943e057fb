// ES module entry: the same two functions as index.js.
import dprl from './index.js';

export const { load, getLoadablePath } = dprl;
export default dprl;

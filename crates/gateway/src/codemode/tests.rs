//! Code mode in the gateway without a worker: the surface a client lists, refusals of direct calls, the
//! pre-run check, the held run and its resume, and the records of a program's calls.

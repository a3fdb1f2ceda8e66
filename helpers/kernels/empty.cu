// empty: lecture 10. Does nothing; timing many launches of it measures what a launch itself costs.
extern "C" __global__ void empty() {}

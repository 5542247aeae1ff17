// Ctrl-C, handled the same way by every command: the first SIGINT (or SIGTERM) sets a flag that the
// long loops poll at their safe points (between graph nodes, between timed runs, between find's
// candidates, between rounds of a measurement, between output channels of the FFT algorithms'
// weight packing, between layers and parts of a layer while a model's weights are initialised),
// so the run stops within a fraction of a second with every row already written
// intact and exits 128 + the signal (130 for SIGINT, 143 for SIGTERM); a second one exits at once.
#pragma once

namespace nnperf {

// Installs the handlers (main() does this once).
void install_interrupt_handlers();
// Sets the flag as the first signal would (tests, and programs that stop themselves).
void request_interrupt();
bool interrupt_requested();
// 128 + the first signal's number (130 when the flag was set by request_interrupt).
int interrupt_exit_code();
// Throws InterruptedError when the flag is set: call at a safe point.
void check_interrupt();
// Clears the flag (tests).
void clear_interrupt();

}  // namespace nnperf

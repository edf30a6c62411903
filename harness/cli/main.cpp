#include "harness/cli/cli.h"

int main(int argc, char** argv) { return kvbench::cli::main(argc, argv); }

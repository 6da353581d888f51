// The CLI's commands; each returns the process exit status.
#pragma once

namespace pb::cli {

int cmd_list(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_net(int argc, char** argv);

}  // namespace pb::cli

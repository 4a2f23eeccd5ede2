namespace claimcheck {
int cli_main(int argc, char** argv);
}
int main(int argc, char** argv) { return claimcheck::cli_main(argc, argv); }

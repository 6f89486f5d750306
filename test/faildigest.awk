# faildigest.awk: the first lines of each failed test's output, printed
# again after a long `go test ./...` run, so that a log cut in the middle
# (as CI shows it) still says why each test failed.
# Use: awk -f test/faildigest.awk test.log
/^[ \t]*--- FAIL: / { block = 1; kept = 0; print; next }
/^(=== |[ \t]*--- PASS|[ \t]*--- SKIP|ok  |PASS$|FAIL)/ { block = 0 }
/^panic: / { block = 1; kept = 0 }
block && /Endpoints is deprecated/ { next }
block && kept < 20 { print; kept++ }

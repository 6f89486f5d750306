package runtime

import "bytes"

// Tail returns the last n lines of data (all of it when n < 0).
func Tail(data []byte, n int64) []byte {
	if n < 0 {
		return data
	}
	if n == 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	i := end
	for lines := int64(0); lines < n; lines++ {
		j := bytes.LastIndexByte(data[:i], '\n')
		if j < 0 {
			return data
		}
		i = j
		if lines+1 == n {
			return data[i+1:]
		}
	}
	return data[i+1:]
}

# Benchmark workload (tests/bench-launch.sh): word counting with regular expressions,
# hashes and sorting over generated text, as a log summariser would do.  Prints a summary.
use strict;
use warnings;

my $seed = 1;
sub next_rand { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed >> 8; }

my @vocab = map { join '', map { chr(97 + next_rand() % 26) } 1 .. (3 + next_rand() % 7) } 1 .. 5000;
my (%count, %len);
for my $line (1 .. 180000) {
	my $text = '';
	$text .= $vocab[next_rand() % @vocab] . (next_rand() % 3 ? ' ' : ', ') for 1 .. 8;
	while ($text =~ /(\w+)([ ,]+)/g) {
		$count{$1}++;
		$len{length $1} += length $2;
	}
}
my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 4];
print scalar(keys %count), " @top ", join(',', map { "$_:$len{$_}" } sort { $a <=> $b } keys %len), "\n";
